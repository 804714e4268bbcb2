#!/usr/bin/env bash
# The chaos soak (issue 32): a multi-process deployment on this machine,
# hammered with faults under a steady load, then a checker that proves
# exactly-once per event.
#
#   scripts/soak.sh --minutes N [--seed S] [--rate EVENTS_PER_SECOND] [--keep]
#
# Starts, each fresh and under the run dir: a three-node Kafka KRaft cluster
# (scripts/kafka-cluster.sh), PostgreSQL (scripts/db.sh), the S3 store
# (scripts/s3.sh), and as root a tmpfs for each intake's spool; then
# `soak run` (test/soak) starts two registries, two intakes (intake.ack:
# kafka), two processors, a PostgreSQL sink, two Parquet sinks in one
# consumer group on one S3 target and an Iceberg sink, each its own OS
# process with its own log, offers N minutes of load (beacons, synchronous
# and hasty POSTs, about 5 % invalid) while the nemesis injects a fault every
# 10-30 s (seeded: --seed reproduces the schedule), and waits for the
# pipeline to drain; `soak check` then reads PostgreSQL, the Parquet files on
# S3, the Iceberg tables and the error topics. Exit status: the checker's (0: nothing lost,
# duplicated or invented; 1: findings; 2: usage). Every service this script
# started is stopped at the end; --keep keeps the run dir (kept anyway when
# the check fails).
#
# Run dir: $SOAK_RUN_DIR, default ${TMPDIR:-/tmp}/eventlogging-soak-<seed>:
#   history.jsonl  every operation and fault (time, kind, target, details)
#   acks.jsonl     every event sent and whether the intake acknowledged it
#   logs/          one log per role instance; kafka/, db/, s3/ the services'
#   summary.txt    the checker's summary
#
# Ports (loopback): SOAK_PORT base, default 39600: Kafka clients base+11..13,
# controllers base+21..23, PostgreSQL base+32, S3 base+33, the roles base+40..43.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
prog=soak.sh
log() { printf '%s: %s\n' "$prog" "$*" >&2; }

minutes=5 seed=1 rate=300 keep=
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=${2:?--minutes N}; shift 2 ;;
	--seed) seed=${2:?--seed S}; shift 2 ;;
	--rate) rate=${2:?--rate EVENTS_PER_SECOND}; shift 2 ;;
	--keep) keep=1; shift ;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done

base=${SOAK_PORT:-39600}
run=$(realpath -m "${SOAK_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-soak-$seed}")
export KAFKA_CLUSTER_PORT=$((base + 10)) KAFKA_CLUSTER_RUN_DIR=$run/kafka
export POSTGRES_PORT=$((base + 32)) DB_RUN_DIR=$run/db
export EVENTLOGGING_S3_PORT=$((base + 33)) S3_RUN_DIR=$run/s3
export KAFKA_HEAP=${KAFKA_HEAP:-320m}

# The intakes' spools each on a small tmpfs (as root), which the nemesis
# fills for its spool-full fault.
unmount_spools() {
	local m
	for m in $(awk -v d="$run/" 'index($2, d) == 1 { print $2 }' /proc/mounts 2>/dev/null); do
		umount "$m" || true
	done
}

started=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local rc=$?
	unmount_spools
	for s in "${started[@]}"; do
		case "$s" in
		kafka) "$here/kafka-cluster.sh" stop || true ;;
		db) "$here/db.sh" stop postgres || true ;;
		s3) "$here/s3.sh" resume >/dev/null 2>&1 || true; "$here/s3.sh" stop || true ;;
		esac
	done
	if [ "$rc" -eq 0 ] && [ -z "$keep" ]; then
		rm -rf "$run"
	else
		log "run dir kept: $run"
	fi
	exit "$rc"
}
trap cleanup EXIT

t0=$SECONDS
unmount_spools
rm -rf "$run"
mkdir -p "$run/bin" "$run/spool1" "$run/spool2"
chmod 0755 "$run"
if [ "$(id -u)" = 0 ]; then
	for s in spool1 spool2; do
		mount -t tmpfs -o size=256m,mode=0700 "soak-$s" "$run/$s" ||
			log "no tmpfs on $run/$s: the spool-full fault only cuts a broker off"
	done
else
	log "not root: the spools are not on a tmpfs, and the spool-full fault only cuts a broker off"
fi
log "building eventlogging and soak"
(cd "$root" && go build -o "$run/bin/eventlogging" ./cmd/eventlogging && go build -o "$run/bin/soak" ./test/soak)

started+=(kafka)
brokers=$("$here/kafka-cluster.sh" start --fresh | tail -n 1)
started+=(db)
eval "$("$here/db.sh" start postgres)"
started+=(s3)
eval "$("$here/s3.sh" start --fresh)"
export EVENTLOGGING_POSTGRES_DSN EVENTLOGGING_S3_ENDPOINT EVENTLOGGING_S3_REGION \
	EVENTLOGGING_S3_ACCESS_KEY EVENTLOGGING_S3_SECRET_KEY
export SOAK_BROKERS=$brokers
# The bucket of the Parquet files (a signed PUT; S3 wants the payload hash).
curl -sf -o /dev/null -X PUT --aws-sigv4 "aws:amz:$EVENTLOGGING_S3_REGION:s3" \
	--user "$EVENTLOGGING_S3_ACCESS_KEY:$EVENTLOGGING_S3_SECRET_KEY" \
	-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
	"$EVENTLOGGING_S3_ENDPOINT/soak"
log "services up after $((SECONDS - t0))s"

rc=0
(cd "$root" && "$run/bin/soak" run --dir "$run" --bin "$run/bin/eventlogging" --scripts "$here" \
	--schemas "$root/examples/schemas" --minutes "$minutes" --seed "$seed" --rate "$rate" --port $((base + 40))) || rc=$?
if [ $rc -eq 0 ]; then
	"$run/bin/soak" check --dir "$run" | tee "$run/summary.txt" || rc=$?
fi
log "finished after $((SECONDS - t0))s, exit status $rc"
exit $rc
