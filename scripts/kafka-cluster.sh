#!/usr/bin/env bash
# A three-node Apache Kafka KRaft cluster on loopback for the reliability
# tests (test/e2e/reliability_*_test.go), from the jars scripts/kafka.sh
# fetches. Each node is broker and controller, with its own run dir and pid file.
#
#   scripts/kafka-cluster.sh start [--fresh]
#                             format storage (when a node has none, or always
#                             with --fresh), start the three nodes, wait until
#                             each answers metadata and sees all three brokers,
#                             print the bootstrap list
#   scripts/kafka-cluster.sh stop
#                             SIGTERM every node and wait for it to exit
#   scripts/kafka-cluster.sh status
#                             one line per node (up/down); the bootstrap list of
#                             the nodes that answer; exit 1 when none does
#   scripts/kafka-cluster.sh kill N
#                             SIGKILL node N (1..3) and wait until it is gone
#   scripts/kafka-cluster.sh restart N
#                             start node N again (SIGTERM first if it runs) and
#                             wait until it answers metadata
#   scripts/kafka-cluster.sh leader TOPIC PARTITION
#                             print the node id leading TOPIC's PARTITION
#   scripts/kafka-cluster.sh bootstrap
#                             print the bootstrap list (no request is made)
#
# Topics default to replication factor 3 with min.insync.replicas=2, as do
# the offsets and transaction-state topics: one node may be down at any time
# without refusing acks=all produces.
#
# Environment:
#   KAFKA_CLUSTER_PORT     base port (default 39510): node N listens for clients
#                          on base+N (39511-39513) and for controllers on
#                          base+10+N (39521-39523)
#   KAFKA_HEAP             JVM heap of each node (default 384m)
#   KAFKA_CACHE_DIR        where scripts/kafka.sh caches the jars (same default)
#   KAFKA_CLUSTER_RUN_DIR  parent of the node dirs node1..node3 (default
#                          ${TMPDIR:-/tmp}/eventlogging-kafka-cluster-<base port>)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom="$here/kafka/pom.xml"
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
base=${KAFKA_CLUSTER_PORT:-39510}
heap=${KAFKA_HEAP:-384m}
# The same cache path logic as scripts/kafka.sh, which fetches into it.
cache=${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging}
libs="$cache/kafka-$version/libs"
run=${KAFKA_CLUSTER_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-kafka-cluster-$base}
nodes=(1 2 3)

log() { printf 'kafka-cluster.sh: %s\n' "$*" >&2; }

port() { echo $((base + $1)); }
cport() { echo $((base + 10 + $1)); }
addr() { echo "127.0.0.1:$(port "$1")"; }
dir() { echo "$run/node$1"; }

bootstrap() {
	local list=() n
	for n in "${nodes[@]}"; do list+=("$(addr "$n")"); done
	local IFS=,
	echo "${list[*]}"
}

voters() {
	local list=() n
	for n in "${nodes[@]}"; do list+=("$n@127.0.0.1:$(cport "$n")"); done
	local IFS=,
	echo "${list[*]}"
}

check_node() {
	case "${1:-}" in
	1 | 2 | 3) ;;
	*)
		log "node must be 1, 2 or 3, not '${1:-}'"
		exit 2
		;;
	esac
}

# answers succeeds when node N returns metadata (a real Kafka request).
answers() {
	kcat -L -b "$(addr "$1")" -m 2 >/dev/null 2>&1
}

# sees_all succeeds when node N's metadata lists all three brokers.
sees_all() {
	local n
	n=$(kcat -L -b "$(addr "$1")" -m 2 2>/dev/null | sed -n 's/^ *\([0-9]*\) brokers:.*/\1/p')
	[ "${n:-0}" -eq "${#nodes[@]}" ]
}

pid_alive() {
	local f
	f="$(dir "$1")/kafka.pid"
	[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

jvm_opts() {
	echo "-Xms$heap -Xmx$heap -XX:+UseG1GC -Djava.awt.headless=true -Dlog4j2.configurationFile=$here/kafka/log4j2.properties"
}

write_config() {
	local n=$1 d
	d=$(dir "$n")
	mkdir -p "$d/data"
	cat >"$d/server.properties" <<EOF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:$(port "$n"),CONTROLLER://127.0.0.1:$(cport "$n")
advertised.listeners=PLAINTEXT://127.0.0.1:$(port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$d/data
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
unclean.leader.election.enable=false
offsets.topic.replication.factor=3
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.replica.fetchers=1
background.threads=4
log.segment.bytes=67108864
log.cleaner.dedupe.buffer.size=8388608
EOF
}

# format N CLUSTER_ID formats node N's storage.
format() {
	local n=$1 d
	d=$(dir "$n")
	# shellcheck disable=SC2046
	java -cp "$libs/*" $(jvm_opts) kafka.tools.StorageTool format \
		-t "$2" -c "$d/server.properties" >"$d/format.log" 2>&1 ||
		{
			cat "$d/format.log" >&2
			exit 1
		}
}

launch() {
	local n=$1 d
	d=$(dir "$n")
	if answers "$n"; then
		log "$(addr "$n") already answers, but not as node $n of $run: another cluster runs on these ports"
		exit 1
	fi
	# shellcheck disable=SC2046
	nohup java -cp "$libs/*" $(jvm_opts) kafka.Kafka "$d/server.properties" \
		>>"$d/kafka.log" 2>&1 </dev/null &
	echo $! >"$d/kafka.pid"
	log "node $n starting at $(addr "$n") (pid $!, run dir $d)"
}

# wait_for N CHECK waits up to 120 s until CHECK N succeeds.
wait_for() {
	local n=$1 check=$2 deadline=$((SECONDS + 120))
	until "$check" "$n"; do
		if ! pid_alive "$n"; then
			log "node $n exited during start-up; last log lines:"
			tail -n 40 "$(dir "$n")/kafka.log" >&2
			exit 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "node $n: '$check' did not succeed within 120s"
			tail -n 40 "$(dir "$n")/kafka.log" >&2
			exit 1
		fi
		sleep 0.3
	done
}

need_tools() {
	command -v java >/dev/null || {
		log "java not found"
		exit 1
	}
	command -v kcat >/dev/null || {
		log "kcat not found (apt-get install kcat)"
		exit 1
	}
	"$here/kafka.sh" fetch
}

start() {
	need_tools
	local n fresh=
	if [ "${1:-}" = "--fresh" ]; then
		fresh=1
	fi
	for n in "${nodes[@]}"; do
		if [ ! -f "$(dir "$n")/data/meta.properties" ]; then
			fresh=1
		fi
	done
	if [ -n "$fresh" ]; then
		for n in "${nodes[@]}"; do
			if pid_alive "$n"; then
				log "node $n is running; stop the cluster before a fresh start"
				exit 1
			fi
		done
		rm -rf "$run"
		local cluster
		# shellcheck disable=SC2046
		cluster=$(java -cp "$libs/*" $(jvm_opts) kafka.tools.StorageTool random-uuid)
		for n in "${nodes[@]}"; do
			write_config "$n"
			format "$n" "$cluster"
		done
	fi
	for n in "${nodes[@]}"; do
		write_config "$n"
		if pid_alive "$n"; then
			log "node $n already running"
		else
			launch "$n"
		fi
	done
	for n in "${nodes[@]}"; do
		wait_for "$n" sees_all
	done
	log "cluster ready after ${SECONDS}s"
	bootstrap
}

stop_node() {
	local n=$1 pid
	if ! pid_alive "$n"; then
		rm -f "$(dir "$n")/kafka.pid"
		return 0
	fi
	pid=$(cat "$(dir "$n")/kafka.pid")
	kill -TERM "$pid"
	local deadline=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "node $n did not stop within 60s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$(dir "$n")/kafka.pid"
}

stop() {
	local n pids=()
	# SIGTERM all at once: stopping one by one makes the last ones wait for
	# partition leadership to move to nodes that are about to stop too.
	for n in "${nodes[@]}"; do
		if pid_alive "$n"; then
			kill -TERM "$(cat "$(dir "$n")/kafka.pid")"
			pids+=("$n")
		fi
	done
	for n in "${pids[@]}"; do
		stop_node "$n"
	done
	if [ ${#pids[@]} -gt 0 ]; then
		log "stopped node(s) ${pids[*]}"
	else
		log "not running"
	fi
}

kill_node() {
	check_node "$1"
	local n=$1 pid
	if ! pid_alive "$n"; then
		log "node $n is not running"
		exit 1
	fi
	pid=$(cat "$(dir "$n")/kafka.pid")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	rm -f "$(dir "$n")/kafka.pid"
	log "node $n SIGKILLed (pid $pid)"
}

restart_node() {
	check_node "$1"
	local n=$1
	need_tools
	if [ ! -f "$(dir "$n")/data/meta.properties" ]; then
		log "node $n has no storage; run start first"
		exit 1
	fi
	stop_node "$n"
	launch "$n"
	wait_for "$n" answers
	log "node $n answers after ${SECONDS}s"
}

status() {
	local n up=() line
	for n in "${nodes[@]}"; do
		line="node $n $(addr "$n")"
		if answers "$n"; then
			up+=("$(addr "$n")")
			echo "$line up"
		elif pid_alive "$n"; then
			echo "$line starting (pid $(cat "$(dir "$n")/kafka.pid"), not answering)"
		else
			echo "$line down"
		fi
	done
	if [ ${#up[@]} -eq 0 ]; then
		log "no node answers"
		exit 1
	fi
	local IFS=,
	echo "${up[*]}"
}

# leader prints the leader id of TOPIC's PARTITION from kcat's metadata,
# asked of each node in turn (one may be down).
leader() {
	local topic=${1:?usage: leader TOPIC PARTITION} part=${2:?usage: leader TOPIC PARTITION} n id
	for n in "${nodes[@]}"; do
		id=$(kcat -L -b "$(addr "$n")" -t "$topic" -m 3 2>/dev/null |
			sed -n "s/^ *partition $part, leader \(-\{0,1\}[0-9]*\),.*/\1/p")
		if [ -n "$id" ]; then
			echo "$id"
			return 0
		fi
	done
	log "no node answered metadata for $topic partition $part"
	exit 1
}

case "${1:-}" in
start) start "${2:-}" ;;
stop) stop ;;
status) status ;;
kill) kill_node "${2:-}" ;;
restart) restart_node "${2:-}" ;;
leader) leader "${2:-}" "${3:-}" ;;
bootstrap) bootstrap ;;
*)
	sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
