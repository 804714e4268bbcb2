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
#   scripts/kafka-cluster.sh signal N STOP|CONT
#                             SIGSTOP or SIGCONT node N: a stopped node answers
#                             nobody, as if the network cut it off
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
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"
heap=${KAFKA_HEAP:-384m}
# The jars scripts/kafka.sh fetches.
# shellcheck source-path=SCRIPTDIR source=lib/kafka.sh
. "$here/lib/kafka.sh"
base=${KAFKA_CLUSTER_PORT:-39510}
run=${KAFKA_CLUSTER_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-kafka-cluster-$base}
nodes=(1 2 3)

port() { echo $((base + $1)); }
cport() { echo $((base + 10 + $1)); }
addr() { echo "127.0.0.1:$(port "$1")"; }
dir() { echo "$run/node$1"; }
pidfile() { echo "$(dir "$1")/kafka.pid"; }

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

node_alive() { pid_alive "$(pidfile "$1")"; }

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
	quietly "$d/format.log" "${kafka_java[@]}" kafka.tools.StorageTool format \
		-t "$2" -c "$d/server.properties"
}

launch() {
	local n=$1 d
	d=$(dir "$n")
	if answers "$n"; then
		log "$(addr "$n") already answers, but not as node $n of $run: another cluster runs on these ports"
		exit 1
	fi
	spawn "$(pidfile "$n")" "$d/kafka.log" "${kafka_java[@]}" kafka.Kafka "$d/server.properties"
	log "node $n starting at $(addr "$n") (pid $!, run dir $d)"
}

# wait_for N CHECK waits up to 120 s until CHECK N succeeds.
wait_for() {
	local n=$1 check=$2
	wait_ready "node $n" "$(cat "$(pidfile "$n")")" "$(dir "$n")/kafka.log" 120 0.3 \
		"node $n: '$check' did not succeed within 120s" "$check" "$n"
}

need_tools() {
	need java
	need kcat "apt-get install kcat"
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
			if node_alive "$n"; then
				log "node $n is running; stop the cluster before a fresh start"
				exit 1
			fi
		done
		rm -rf "$run"
		local cluster
		cluster=$("${kafka_java[@]}" kafka.tools.StorageTool random-uuid)
		for n in "${nodes[@]}"; do
			write_config "$n"
			format "$n" "$cluster"
		done
	fi
	for n in "${nodes[@]}"; do
		write_config "$n"
		if node_alive "$n"; then
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
	local n=$1
	if ! node_alive "$n"; then
		rm -f "$(pidfile "$n")"
		return 0
	fi
	terminate "node $n" "$(pidfile "$n")" 60 0.2
}

stop() {
	local n pids=()
	# SIGTERM all at once: stopping one by one makes the last ones wait for
	# partition leadership to move to nodes that are about to stop too.
	for n in "${nodes[@]}"; do
		if node_alive "$n"; then
			kill -TERM "$(cat "$(pidfile "$n")")"
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
	if ! node_alive "$n"; then
		log "node $n is not running"
		exit 1
	fi
	pid=$(cat "$(pidfile "$n")")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	rm -f "$(pidfile "$n")"
	log "node $n SIGKILLed (pid $pid)"
}

signal_node() {
	check_node "$1"
	local n=$1 sig=${2:-}
	case "$sig" in
	STOP | CONT) ;;
	*)
		log "usage: signal N STOP|CONT"
		exit 2
		;;
	esac
	if ! node_alive "$n"; then
		log "node $n is not running"
		exit 1
	fi
	kill "-$sig" "$(cat "$(pidfile "$n")")"
	log "node $n SIG$sig"
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
		elif node_alive "$n"; then
			echo "$line starting (pid $(cat "$(pidfile "$n")"), not answering)"
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
signal) signal_node "${2:-}" "${3:-}" ;;
restart) restart_node "${2:-}" ;;
leader) leader "${2:-}" "${3:-}" ;;
bootstrap) bootstrap ;;
*) usage ;;
esac
