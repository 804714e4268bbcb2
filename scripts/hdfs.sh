#!/usr/bin/env bash
# Real HDFS for the integration tests: Apache Hadoop's own MiniDFSCluster (one
# NameNode, one DataNode, in one JVM), from hadoop-client-minicluster on Maven Central.
#
#   scripts/hdfs.sh fetch     download the Hadoop jars (cached) with Maven
#   scripts/hdfs.sh start [--fresh]
#                             start the cluster on 127.0.0.1 (formatting the file system
#                             if the run dir has none, or always with --fresh), wait until
#                             the NameNode has a live DataNode and is out of safe mode,
#                             print the environment for the tests
#   scripts/hdfs.sh stop      SIGTERM the cluster and wait for it to exit (data is kept;
#                             `start` brings it back with the same files)
#   scripts/hdfs.sh pause     SIGSTOP the cluster: connections are still accepted by the
#                             kernel but nothing answers (calls hang until they time out)
#   scripts/hdfs.sh resume    SIGCONT it; nothing is lost
#   scripts/hdfs.sh status    print the environment if the NameNode answers
#   scripts/hdfs.sh dfs ARGS...
#                             run Hadoop's own shell (org.apache.hadoop.fs.FsShell, as in
#                             `hdfs dfs`) against the cluster, e.g. dfs -ls -R /
#
# For a fault test: `pause`/`resume` makes the cluster hang, `stop`/`start` makes it
# refuse connections; both bring it back with its data intact.
# scripts/test.sh shares one instance among all the packages' tests, which run
# in parallel: a fault test should pause or stop one of its own, on a port of
# its own in 39000-39999 (reserved by test.sh), e.g.
#   EVENTLOGGING_HDFS_PORT=39020 EVENTLOGGING_HDFS_HTTP_PORT=39070 scripts/hdfs.sh start
# (the run dir follows the port).
#
# The environment goes to stdout, one NAME='value' per line, so
# `eval "$(scripts/hdfs.sh start)"` sets it:
#   EVENTLOGGING_HDFS_NAMENODE  NameNode RPC address, 127.0.0.1:PORT
# Permissions are off (dfs.permissions.enabled=false): any user may write anywhere.
# Replication is 1. internal/testsupport gives each test a directory of its own.
#
# Environment:
#   EVENTLOGGING_HDFS_PORT       NameNode RPC port on 127.0.0.1 (default 38020)
#   EVENTLOGGING_HDFS_HTTP_PORT  NameNode HTTP port on 127.0.0.1 (default 38070); the
#                                DataNode's ports are chosen by the kernel
#   HDFS_HEAP                    JVM heap (default 512m)
#   HDFS_CACHE_DIR               where jars are cached (default ${XDG_CACHE_HOME:-~/.cache}/eventlogging)
#   HDFS_RUN_DIR                 data, config, log and pid file (default ${TMPDIR:-/tmp}/eventlogging-hdfs-$EVENTLOGGING_HDFS_PORT)
#
# The Hadoop version is pinned in scripts/hdfs/pom.xml and nowhere else.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"
pom="$here/hdfs/pom.xml"
version=$(pom_property "$pom" hadoop.version)
port=${EVENTLOGGING_HDFS_PORT:-38020}
http_port=${EVENTLOGGING_HDFS_HTTP_PORT:-38070}
heap=${HDFS_HEAP:-512m}
cache=${HDFS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging}
libs="$cache/hadoop-$version/libs"
webapps="$cache/hadoop-$version/webapps"
run=$(realpath -m "${HDFS_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-hdfs-$port}")
pidfile="$run/hdfs.pid"
addr="127.0.0.1:$port"

print_env() { env_lines EVENTLOGGING_HDFS_NAMENODE "$addr"; }

fetch() {
	fetch_jars "$pom" "$libs" "Apache Hadoop $version minicluster jars" unpack_webapps
}

# unpack_webapps unpacks the HTTP servers' web apps from the fetched jars, to
# come ahead of them on the classpath: from the jar Jetty unpacks each by
# reading the whole 56 MB (several seconds per server on a start).
unpack_webapps() {
	rm -rf "$webapps"
	python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("webapps/")])' \
		"$libs/hadoop-client-minicluster-$version.jar" "$webapps"
	ls "$webapps/webapps/hdfs"
}

# conf writes the client and server configuration (the classpath's first entry):
# Hadoop's Configuration insists on a core-site.xml.
conf() {
	mkdir -p "$run/conf"
	cat >"$run/conf/core-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>fs.defaultFS</name><value>hdfs://$addr</value></property>
</configuration>
EOF
	cat >"$run/conf/hdfs-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>dfs.replication</name><value>1</value></property>
  <property><name>dfs.permissions.enabled</name><value>false</value></property>
</configuration>
EOF
}

# jvm is the java command line for Hadoop's classes: the minicluster classpath,
# slf4j-simple logging to stderr, warnings only, except the cluster manager's
# "Started" line.
jvm=(java -cp "$run/conf:$webapps:$libs/*" -Djava.awt.headless=true
	-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS
	-Dorg.slf4j.simpleLogger.defaultLogLevel=warn
	-Dorg.slf4j.simpleLogger.log.org.apache.hadoop.util.NativeCodeLoader=error
	-Dorg.slf4j.simpleLogger.log.org.apache.hadoop.mapreduce.MiniHadoopClusterManager=info)

# answers succeeds when the NameNode's JMX (its HTTP server, a real request)
# reports a live DataNode and no safe mode, within 2 s.
answers() {
	local state info
	state=$(curl -sf --max-time 2 "http://127.0.0.1:$http_port/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState") &&
		info=$(curl -sf --max-time 2 "http://127.0.0.1:$http_port/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo") &&
		grep -q '"NumLiveDataNodes" : [1-9]' <<<"$state" &&
		grep -q '"Safemode" : ""' <<<"$info"
}

start() {
	need java
	need python3
	need curl "apt-get install curl"
	fetch
	if pid_alive "$pidfile" && answers; then
		log "already running at $addr"
		print_env
		return 0
	fi
	stop_hung cluster "$pidfile" "paused? try scripts/hdfs.sh resume"
	ports_free "$pidfile" "EVENTLOGGING_HDFS_PORT / EVENTLOGGING_HDFS_HTTP_PORT" "$port" "$http_port"
	local format=()
	if [ "${1:-}" = "--fresh" ] || [ ! -d "$run/data/name-0-1/current" ]; then
		rm -rf "$run"
		format=(-format)
	fi
	mkdir -p "$run/data"
	conf
	log "starting HDFS (Hadoop $version MiniDFSCluster) at $addr, HTTP 127.0.0.1:$http_port (run dir $run)"
	# Run from the run dir, where the cluster writes some files of its own.
	# Without -format it reopens the NameNode and DataNode storage of the
	# earlier run (MiniDFSCluster's hdfs.minidfs.basedir). No WebHDFS (the
	# clients speak RPC): Jersey would scan the 56 MB jar for its resources,
	# seconds on every start.
	cd "$run"
	spawn "$pidfile" "$run/hdfs.log" "${jvm[@]}" -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC \
		org.apache.hadoop.mapreduce.MiniHadoopClusterManager -nomr "${format[@]}" -datanodes 1 \
		-nnport "$port" -nnhttpport "$http_port" \
		-D hdfs.minidfs.basedir="$run/data" -D dfs.permissions.enabled=false -D dfs.replication=1 -D dfs.webhdfs.enabled=false
	cd - >/dev/null
	wait_ready cluster "$(cat "$pidfile")" "$run/hdfs.log" 90 0.2 "cluster not ready within 90s; last log lines:" answers
	log "ready at $addr after ${SECONDS}s"
	print_env
}

stop() { stop_server cluster "$pidfile" 60 0.2; }

case "${1:-}" in
fetch) fetch ;;
start) start "${2:-}" ;;
stop) stop ;;
pause) signal_server "$pidfile" STOP paused ;;
resume) resume_server cluster "$pidfile" 60 0.2 answers ;;
status) if answers; then print_env; else log "not answering at $addr (HTTP 127.0.0.1:$http_port)"; exit 1; fi ;;
dfs)
	shift
	fetch
	conf
	exec "${jvm[@]}" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC org.apache.hadoop.fs.FsShell "$@"
	;;
*) usage ;;
esac
