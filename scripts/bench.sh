#!/usr/bin/env bash
# Benchmarks, written to bench-results/<UTC time>/ with a summary.md:
#
#   scripts/bench.sh          every hot-path benchmark (go test -bench -benchmem):
#                             line parsing, beacon decoding, schema validation,
#                             capsule encoding, uuid, HMAC, processing (and its
#                             invalid-share cost), Avro, SQL and Parquet writes,
#                             intake HTTP, the pipeline on kfake (200,000 events)
#   scripts/bench.sh --e2e-only  only the end-to-end part below
#   scripts/bench.sh --e2e    also the whole pipeline on a real Kafka broker
#                             (scripts/kafka.sh on port 39292): the pipeline
#                             benchmark (1,000,000 events), then intake, processor
#                             and SQL sink (SQLite) as separate processes driven by
#                             `eventlogging bench` (beacons, 32 clients, 30 s), the
#                             rows counted by uuid in SQL; BENCH_MODE=hasty (and
#                             BENCH_BATCH, default 50) sends sendBeacon-style
#                             batches instead of one GET per event; every
#                             EVENTLOGGING_* variable reaches the roles, e.g.
#                             EVENTLOGGING_PROCESS_MIXED_TOPIC=- (no mixed topic);
#                             BENCH_PIPELINE=0 skips the pipeline benchmark;
#                             BENCH_SCHEMAS=testdata/workload/schemas uses the
#                             standard workload's schemas (default
#                             examples/schemas); BENCH_FILES=1 has the sink
#                             write Parquet files as well, counted by uuid
#                             (with the test virtualenv's DuckDB) once the
#                             sink has stopped; BENCH_SQLITE_QUERY is added to
#                             the SQLite DSN, e.g. '_pragma=wal_autocheckpoint(10000)';
#                             BENCH_WARMUP seconds (default 10, 0 for none) of
#                             the same load go first, unmeasured, and must be
#                             in SQL before the measured 30 s start: the broker
#                             is a fresh JVM that compiles its hot paths under load
#
# Run it on a quiet machine: every figure shares the cores with whatever
# else runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
e2e=false micro=true
case "${1:-}" in
--e2e) e2e=true ;;
--e2e-only) e2e=true micro=false ;;
esac
out=bench-results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
log() { printf 'bench.sh: %s\n' "$*" >&2; }

if $micro; then
log "micro-benchmarks → $out/micro.txt"
EVENTLOGGING_BENCH_EVENTS=${EVENTLOGGING_BENCH_EVENTS:-200000} \
go test -run '^$' -bench . -benchmem -benchtime 2s -count 3 \
	./internal/lineformat ./internal/capsule ./internal/schema ./internal/iphash \
	./internal/process ./internal/avrowire ./internal/sink/sqlsink ./internal/sink/filesink \
	./internal/intake ./internal/registry ./internal/spool 2>&1 | tee "$out/micro.txt" | grep -E '^(Benchmark|ok|FAIL)' >&2
else
	: >"$out/micro.txt"
fi

if $e2e; then
	export KAFKA_PORT=39292
	brokers=$(scripts/kafka.sh start --fresh)
	work=$(mktemp -d)
	pids=()
	cleanup() {
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
		wait 2>/dev/null || true
		scripts/kafka.sh stop || true
		rm -rf "$work"
	}
	trap cleanup EXIT
	if [ "${BENCH_PIPELINE:-1}" = 1 ]; then
		log "pipeline benchmark on the real broker (1,000,000 events) → $out/pipeline-kafka.txt"
		EVENTLOGGING_KAFKA_BROKERS=$brokers EVENTLOGGING_BENCH_EVENTS=1000000 \
			go test -run '^$' -bench 'Pipeline/kafka' -benchtime 1x ./internal/process | tee "$out/pipeline-kafka.txt" | grep -E '^Benchmark' >&2
	else
		: >"$out/pipeline-kafka.txt"
	fi

	go build -o "$work/eventlogging" ./cmd/eventlogging
	el="$work/eventlogging"
	export EVENTLOGGING_KAFKA_BROKERS=$brokers EVENTLOGGING_METRICS_LISTEN=off
	schemas=${BENCH_SCHEMAS:-examples/schemas}
	files=()
	if [ "${BENCH_FILES:-0}" = 1 ]; then
		# Files are published when they are this old (or when the sink stops).
		files=(--files "$work/files" --format parquet)
		export EVENTLOGGING_SINK_FILE_MAX_AGE=${EVENTLOGGING_SINK_FILE_MAX_AGE:-10s}
	fi
	"$el" intake --listen 127.0.0.1:18280 --spool-dir "$work/spool" --schemas "$schemas" 2>"$work/intake.log" &
	pids+=($!)
	"$el" process --schemas "$schemas" 2>"$work/process.log" &
	pids+=($!)
	"$el" sink --sql "sqlite:$work/e2e.db${BENCH_SQLITE_QUERY:+?$BENCH_SQLITE_QUERY}" "${files[@]}" --schemas "$schemas" 2>"$work/sink.log" &
	pids+=($!)
	for _ in $(seq 100); do curl -sf http://127.0.0.1:18280/readyz >/dev/null && break; sleep 0.2; done
	log "end to end: ${BENCH_MODE:-beacon} → intake → Kafka → processor → sink (SQL${files:+ and Parquet}) → $out/e2e.json"
	# load DURATION: the load, 32 clients, its JSON report on stdout.
	load() {
		"$el" bench --url http://127.0.0.1:18280 --kafka-brokers "$brokers" --schemas "$schemas" --mode "${BENCH_MODE:-beacon}" --batch "${BENCH_BATCH:-50}" --concurrency 32 \
			--duration "$1" --invalid 0 --json
	}
	# report run_id|accepted FILE: a field of a load's report.
	report() {
		python3 -c 'import json,sys; r = json.load(open(sys.argv[2])); print(r["run_id"] if sys.argv[1] == "run_id" else r["events"]["accepted"])' "$1" "$2"
	}
	# in_sql RUN WANT START: waits until WANT distinct uuids of bench run RUN
	# are in SQL (every table), then prints the count and the rate since START.
	in_sql() {
		python3 - "$work/e2e.db" "bench-$1" "$2" "$3" <<'PY'
import sqlite3, sys, time
db, wiki, want, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
deadline = time.time() + 300
while True:
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%'")]
    rows = uuids = 0
    for t in tables:
        cols = [r[1] for r in con.execute(f'pragma table_info("{t}")')]
        if "wiki" not in cols or "uuid" not in cols:
            continue
        r, u = con.execute(f'select count(*), count(distinct uuid) from "{t}" where wiki = ?', (wiki,)).fetchone()
        rows += r; uuids += u
    con.close()
    if uuids >= want or time.time() > deadline:
        break
    time.sleep(0.5)
took = time.time() - start
print(f"sent and accepted {want}; in SQL {uuids} distinct uuids in {rows} rows; lost {want - uuids}; duplicates {rows - uuids}")
print(f"end to end into SQL: {want / took:.0f} events/s ({took:.1f} s from the first request to the last row)")
PY
	}
	# A warm-up run first (BENCH_WARMUP seconds, default 10; 0: none), counted
	# nowhere: the broker is a fresh JVM, and its first seconds of load
	# compile its hot paths, which a running broker has long done.
	warm=${BENCH_WARMUP:-10}
	case $warm in '' | *[!0-9]*) log "BENCH_WARMUP=$warm: want whole seconds"; exit 2 ;; esac
	if [ "$warm" -gt 0 ]; then
		log "warm-up: ${warm}s of the same load, not measured"
		load "${warm}s" >"$work/warmup.json"
		in_sql "$(report run_id "$work/warmup.json")" "$(report accepted "$work/warmup.json")" "$(date +%s.%N)" >"$work/warmup-sql.txt"
		log "warm-up: $(head -1 "$work/warmup-sql.txt")"
		if ! grep -q '; lost 0;' "$work/warmup-sql.txt"; then
			log "warm-up: its events did not all reach SQL within 300 s; not measuring"
			exit 1
		fi
	fi
	# CPU seconds of a process so far (user + system), from /proc.
	cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
	kpid=$(cat "${TMPDIR:-/tmp}/eventlogging-kafka-$KAFKA_PORT/kafka.pid")
	roles=(intake processor sink kafka)
	rpids=("${pids[0]}" "${pids[1]}" "${pids[2]}" "$kpid")
	before=()
	for p in "${rpids[@]}"; do before+=("$(cpu "$p")"); done
	start=$(date +%s.%N)
	TIMEFORMAT='bench %U %S'
	{ time load 30s >"$out/e2e.json"; } 2>"$work/bench-time.txt"
	run=$(report run_id "$out/e2e.json")
	want=$(report accepted "$out/e2e.json")
	in_sql "$run" "$want" "$start" >"$out/e2e-sql.txt"
	# CPU per role over the run, per event accepted.
	{
		printf '%-10s %12s %12s\n' role cpu_seconds us_per_event
		for i in "${!roles[@]}"; do
			after=$(cpu "${rpids[$i]}")
			awk -v r="${roles[$i]}" -v a="$after" -v b="${before[$i]}" -v n="$want" 'BEGIN { printf "%-10s %12.2f %12.2f\n", r, a - b, (a - b) * 1e6 / n }'
		done
		awk -v n="$want" '$1 == "bench" { printf "%-10s %12.2f %12.2f\n", "bench", $2 + $3, ($2 + $3) * 1e6 / n }' "$work/bench-time.txt"
	} >"$out/e2e-cpu.txt"
	if [ "${BENCH_FILES:-0}" = 1 ]; then
		# Stop the sink (it publishes its open files), then count this run's
		# rows in the Parquet files by uuid.
		kill -TERM "${pids[2]}"
		wait "${pids[2]}" || true
		py=${EVENTLOGGING_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging/venv/bin/python}
		"$py" - "$work/files" "bench-$run" "$want" >>"$out/e2e-sql.txt" <<'PY' || log "Parquet not counted: needs DuckDB (scripts/test.sh installs it)"
import duckdb, sys
root, wiki, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows, uuids = duckdb.execute(
    f"select count(*), count(distinct uuid) from read_parquet('{root}/**/*.parquet', union_by_name=true) where wiki = ?",
    [wiki]).fetchone()
print(f"in Parquet {uuids} distinct uuids in {rows} rows; lost {want - uuids}; duplicates {rows - uuids}")
PY
	fi
	cat "$out/e2e-sql.txt" "$out/e2e-cpu.txt" >&2
fi

{
	echo "# Benchmark summary ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | cut -d' ' -f3))"
	echo
	echo '```'
	{ grep -E '^Benchmark' "$out/micro.txt" || true; } | awk '{ name=$1; sub(/-[0-9]+$/, "", name); printf "%-60s", name; for (i=3;i<=NF;i+=2) printf " %12s %s", $i, $(i+1); print "" }'
	echo '```'
	if $e2e; then
		echo
		echo '```'
		grep -E '^Benchmark' "$out/pipeline-kafka.txt" || true
		cat "$out/e2e-sql.txt"
		echo
		cat "$out/e2e-cpu.txt"
		echo '```'
	fi
} >"$out/summary.md"
log "summary: $out/summary.md"
