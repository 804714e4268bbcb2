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
pom="$here/hdfs/pom.xml"
version=$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$pom")
port=${EVENTLOGGING_HDFS_PORT:-38020}
http_port=${EVENTLOGGING_HDFS_HTTP_PORT:-38070}
heap=${HDFS_HEAP:-512m}
cache=${HDFS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging}
libs="$cache/hadoop-$version/libs"
webapps="$cache/hadoop-$version/webapps"
run=$(realpath -m "${HDFS_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-hdfs-$port}")
addr="127.0.0.1:$port"

log() { printf 'hdfs.sh: %s\n' "$*" >&2; }

print_env() { printf "%s='%s'\n" EVENTLOGGING_HDFS_NAMENODE "$addr"; }

fetch() {
	if [ -f "$libs/.complete" ]; then
		return 0
	fi
	log "fetching Apache Hadoop $version minicluster jars with Maven into $libs"
	rm -rf "$libs"
	mkdir -p "$libs"
	# Maven's output goes to stderr: stdout is for the environment lines.
	mvn -B -q -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
		-DoutputDirectory="$libs" -DincludeScope=runtime >&2
	# The HTTP servers' web apps, unpacked, and ahead of the jars on the
	# classpath: from the jar Jetty unpacks each by reading the whole 56 MB
	# (several seconds per server on a start).
	rm -rf "$webapps"
	python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("webapps/")])' \
		"$libs/hadoop-client-minicluster-$version.jar" "$webapps"
	ls "$webapps/webapps/hdfs" >/dev/null
	touch "$libs/.complete"
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

pid_alive() {
	[ -f "$run/hdfs.pid" ] && kill -0 "$(cat "$run/hdfs.pid")" 2>/dev/null
}

taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
	command -v java >/dev/null || { log "java not found"; exit 1; }
	command -v python3 >/dev/null || { log "python3 not found"; exit 1; }
	command -v curl >/dev/null || { log "curl not found (apt-get install curl)"; exit 1; }
	fetch
	if pid_alive && answers; then
		log "already running at $addr"
		print_env
		return 0
	fi
	if pid_alive; then
		log "cluster (pid $(cat "$run/hdfs.pid")) does not answer (paused? try scripts/hdfs.sh resume); stopping it"
		stop
	fi
	local p
	for p in "$port" "$http_port"; do
		if taken "$p"; then
			log "port $p is taken by a process this script did not start (pid file $run/hdfs.pid); stop it or set EVENTLOGGING_HDFS_PORT / EVENTLOGGING_HDFS_HTTP_PORT"
			exit 1
		fi
	done
	local format=()
	if [ "${1:-}" = "--fresh" ] || [ ! -d "$run/data/name-0-1/current" ]; then
		rm -rf "$run"
		format=(-format)
	fi
	mkdir -p "$run/data"
	conf
	log "starting HDFS (Hadoop $version MiniDFSCluster) at $addr, HTTP 127.0.0.1:$http_port (run dir $run)"
	printf 'hdfs.sh: starting %s\n' "$(date -u +%FT%TZ)" >>"$run/hdfs.log"
	# Run from the run dir, where the cluster writes some files of its own.
	# Without -format it reopens the NameNode and DataNode storage of the
	# earlier run (MiniDFSCluster's hdfs.minidfs.basedir). No WebHDFS (the
	# clients speak RPC): Jersey would scan the 56 MB jar for its resources,
	# seconds on every start.
	cd "$run"
	nohup "${jvm[@]}" -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC \
		org.apache.hadoop.mapreduce.MiniHadoopClusterManager -nomr "${format[@]}" -datanodes 1 \
		-nnport "$port" -nnhttpport "$http_port" \
		-D hdfs.minidfs.basedir="$run/data" -D dfs.permissions.enabled=false -D dfs.replication=1 -D dfs.webhdfs.enabled=false \
		>>"$run/hdfs.log" 2>&1 </dev/null &
	echo $! >"$run/hdfs.pid"
	cd - >/dev/null
	local deadline=$((SECONDS + 90))
	until answers; do
		if ! pid_alive; then
			log "cluster exited during start-up; last log lines:"
			tail -n 40 "$run/hdfs.log" >&2
			exit 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "cluster not ready within 90s; last log lines:"
			tail -n 40 "$run/hdfs.log" >&2
			exit 1
		fi
		sleep 0.2
	done
	log "ready at $addr after ${SECONDS}s"
	print_env
}

stop() {
	if ! pid_alive; then
		log "not running"
		return 0
	fi
	local pid
	pid=$(cat "$run/hdfs.pid")
	kill -TERM "$pid"
	kill -CONT "$pid" 2>/dev/null || true # a paused JVM acts on the TERM only once continued
	local deadline=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "cluster did not stop within 60s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$run/hdfs.pid"
	log "stopped"
}

signal() {
	local sig=$1 what=$2
	pid_alive || { log "not running"; exit 1; }
	kill -"$sig" "$(cat "$run/hdfs.pid")"
	log "$what (pid $(cat "$run/hdfs.pid"))"
}

case "${1:-}" in
fetch) fetch ;;
start) start "${2:-}" ;;
stop) stop ;;
pause) signal STOP paused ;;
resume)
	signal CONT resumed
	deadline=$((SECONDS + 60))
	until answers; do
		[ "$SECONDS" -lt "$deadline" ] || { log "cluster does not answer after resume"; exit 1; }
		sleep 0.2
	done
	;;
status) if answers; then print_env; else log "not answering at $addr (HTTP 127.0.0.1:$http_port)"; exit 1; fi ;;
dfs)
	shift
	fetch
	conf
	exec "${jvm[@]}" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC org.apache.hadoop.fs.FsShell "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
