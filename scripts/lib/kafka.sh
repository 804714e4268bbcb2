# shellcheck shell=bash
# Apache Kafka's jars, as scripts/kafka.sh fetches them and as both it and
# scripts/kafka-cluster.sh run them. Sourced after lib/server.sh, with here
# (the scripts directory) and heap (each JVM's heap) set; it sets:
#   pom, version  scripts/kafka/pom.xml, where the version is pinned, and that version
#   libs          the cached jars (under KAFKA_CACHE_DIR, default
#                 ${XDG_CACHE_HOME:-~/.cache}/eventlogging)
#   kafka_java    the java command line for Kafka's classes (append the class
#                 and its arguments)
pom="${here:?}/kafka/pom.xml"
version=$(pom_property "$pom" kafka.version)
libs="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging}/kafka-$version/libs"
# shellcheck disable=SC2034 # used by the scripts that source this
kafka_java=(java -cp "$libs/*" -Xms"${heap:?}" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true
	-Dlog4j2.configurationFile="$here/kafka/log4j2.properties")
