#!/usr/bin/env bash
# Real Apache Kafka for the integration tests, fetched from Maven Central.
#
#   scripts/kafka.sh fetch    download the broker jars (cached) with Maven
#   scripts/kafka.sh start [--fresh]
#                             start one KRaft broker+controller (formatting storage
#                             first if the run dir has none, or always with --fresh),
#                             wait until it answers metadata, print the bootstrap address
#   scripts/kafka.sh stop     SIGTERM the broker and wait for it to exit
#   scripts/kafka.sh status   print the bootstrap address if the broker answers
#
# Environment:
#   KAFKA_PORT       client port on 127.0.0.1 (default 39092; the controller uses +1)
#   KAFKA_HEAP       JVM heap (default 512m)
#   KAFKA_CACHE_DIR  where jars are cached (default ${XDG_CACHE_HOME:-~/.cache}/eventlogging)
#   KAFKA_RUN_DIR    data, config, log and pid file (default ${TMPDIR:-/tmp}/eventlogging-kafka-$KAFKA_PORT)
#   KAFKA_SCRAM      1: the client listener is SASL_PLAINTEXT with SCRAM-SHA-256 and
#                    SCRAM-SHA-512 (no anonymous access), for the security tests; run
#                    it on a port of its own, e.g. KAFKA_SCRAM=1 KAFKA_PORT=39692
#   KAFKA_SCRAM_USER, KAFKA_SCRAM_PASSWORD
#                    the SCRAM user created when the storage is formatted (default
#                    eventlogging / eventlogging-secret); it is also the broker's own
#                    inter-broker identity
#
# The Kafka version is pinned in scripts/kafka/pom.xml and nowhere else.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"
heap=${KAFKA_HEAP:-512m}
# shellcheck source-path=SCRIPTDIR source=lib/kafka.sh
. "$here/lib/kafka.sh"
port=${KAFKA_PORT:-39092}
cport=$((port + 1))
run=${KAFKA_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-kafka-$port}
pidfile="$run/kafka.pid"
addr="127.0.0.1:$port"
scram=${KAFKA_SCRAM:-0}
[ "$scram" = 1 ] || scram=0
scram_user=${KAFKA_SCRAM_USER:-eventlogging}
scram_password=${KAFKA_SCRAM_PASSWORD:-eventlogging-secret}
case "$scram_user$scram_password" in
*[\\\"\',=\[\]]* | *[[:space:]]*)
	log 'KAFKA_SCRAM_USER and KAFKA_SCRAM_PASSWORD may not contain quotes, backslashes, commas, brackets, = or spaces'
	exit 2
	;;
esac

fetch() {
	fetch_jars "$pom" "$libs" "Apache Kafka $version jars" ls "$libs/kafka_2.13-$version.jar"
}

# answers succeeds when the broker returns metadata (a real Kafka request, not a port probe).
# In SCRAM mode kcat cannot be the judge: librdkafka before 2.6.1 (Debian 12 has 2.0.2)
# fails SCRAM against Kafka 4 (it repeats the client nonce, which Kafka 4 rejects), so
# readiness is the broker's own "STARTED" (it loads the SCRAM users from the metadata log
# before it is unfenced) plus an open port; the Go tests then authenticate for real.
answers() {
	if [ "$scram" = 1 ]; then
		pid_alive "$pidfile" && [ -f "$run/kafka.log" ] &&
			sed -n "/^$prog: starting /h; /^$prog: starting /!H; \${x;p;}" "$run/kafka.log" |
			grep -q 'Transition from STARTING to STARTED' &&
			port_taken "$port"
	else
		kcat -L -b "$addr" -m 2 >/dev/null 2>&1
	fi
}

start() {
	need java
	[ "$scram" = 1 ] || need kcat "apt-get install kcat"
	fetch
	if pid_alive "$pidfile" && answers; then
		log "already running at $addr"
		echo "$addr"
		return 0
	fi
	# Something else listens on our port (another broker, a stale JVM whose
	# pid file is gone): ours would die with "address in use" while that
	# one answers, and stop would then leave it running.
	ports_free "$pidfile" KAFKA_PORT "$port"
	# The mode a run dir was formatted in: a SCRAM broker's users live in its
	# metadata log, so a change of mode or user starts from fresh storage.
	local mode=plaintext listener=PLAINTEXT
	if [ "$scram" = 1 ]; then
		mode="scram $scram_user $(printf '%s' "$scram_password" | sha256sum | cut -c1-16)"
		listener=SASL_PLAINTEXT
	fi
	if [ "${1:-}" = "--fresh" ] || [ ! -f "$run/data/meta.properties" ] ||
		[ "$(cat "$run/mode" 2>/dev/null || echo plaintext)" != "$mode" ]; then
		rm -rf "$run"
		local fresh=1
	fi
	mkdir -p "$run/data"
	printf '%s\n' "$mode" >"$run/mode"
	(umask 077 && : >"$run/server.properties")
	cat >"$run/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listener://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$listener://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=$listener
listener.security.protocol.map=$listener:$listener,CONTROLLER:PLAINTEXT
log.dirs=$run/data
auto.create.topics.enable=false
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.segment.bytes=67108864
log.cleaner.dedupe.buffer.size=8388608
EOF
	local format_scram=()
	if [ "$scram" = 1 ]; then
		# SASL/SCRAM on the client (and inter-broker) listener. In KRaft the
		# first SCRAM users are written into the metadata log when the
		# storage is formatted (--add-scram); the broker authenticates to
		# itself as the same user. The password is in this file (mode 600):
		# the run dir is for tests only.
		cat >>"$run/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$scram_user" password="$scram_password";
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$scram_user" password="$scram_password";
EOF
		format_scram=(--add-scram "SCRAM-SHA-256=[name=$scram_user,password=$scram_password]"
			--add-scram "SCRAM-SHA-512=[name=$scram_user,password=$scram_password]")
	fi
	if [ -n "${fresh:-}" ]; then
		local cluster
		cluster=$("${kafka_java[@]}" kafka.tools.StorageTool random-uuid)
		quietly "$run/format.log" "${kafka_java[@]}" kafka.tools.StorageTool format \
			-t "$cluster" -c "$run/server.properties" "${format_scram[@]}"
	fi
	log "starting Kafka $version at $addr ($listener, run dir $run)"
	spawn "$pidfile" "$run/kafka.log" "${kafka_java[@]}" kafka.Kafka "$run/server.properties"
	wait_ready broker "$(cat "$pidfile")" "$run/kafka.log" 120 0.3 "broker did not answer metadata within 120s" answers
	log "ready at $addr after ${SECONDS}s"
	echo "$addr"
}

case "${1:-}" in
fetch) fetch ;;
start) start "${2:-}" ;;
stop) stop_server broker "$pidfile" 60 0.2 ;;
status) if answers; then echo "$addr"; else log "not answering at $addr"; exit 1; fi ;;
*) usage ;;
esac
