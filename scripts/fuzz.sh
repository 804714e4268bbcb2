#!/usr/bin/env bash
# Every Go fuzz target of the module, each for a bounded time:
#
#   scripts/fuzz.sh            10 s per target
#   scripts/fuzz.sh 60         60 s per target
#   scripts/fuzz.sh 5 ./internal/intake/...   only these packages
#
# Targets are discovered with `go test -list '^Fuzz'` (go test fuzzes one
# target per invocation, so each runs on its own). Their seeds (f.Add and
# the committed testdata/fuzz/<Target>/ corpus) run first. Inputs that find
# new coverage stay in Go's cache; an input that fails is written by go test
# to <package>/testdata/fuzz/<Target>/ — fix the bug and commit the file as a
# regression seed. FUZZ_PARALLEL sets the workers per target (default: go
# test's, GOMAXPROCS).
#
# One line per target, in go test's summary style; exits 1 if any failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec </dev/null

secs=${1:-10}
case "$secs" in
'' | *[!0-9]*)
	echo "usage: scripts/fuzz.sh [SECONDS] [PACKAGES...]" >&2
	exit 2
	;;
esac
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
parallel=()
[ -z "${FUZZ_PARALLEL:-}" ] || parallel=(-parallel "$FUZZ_PARALLEL")

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# `go test -list` prints each package's matching names, then its "ok" line.
if ! go test -count=1 -list '^Fuzz' "${pkgs[@]}" >"$logs/list" 2>&1; then
	cat "$logs/list" >&2
	printf 'FAIL\tfuzz.sh: listing the fuzz targets failed\n'
	exit 1
fi
targets=()
names=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(printf '%s\n' "$line" | awk '{print $2}')
		for n in "${names[@]}"; do targets+=("$pkg $n"); done
		names=()
		;;
	esac
done <"$logs/list"
if [ ${#targets[@]} -eq 0 ]; then
	printf 'FAIL\tfuzz.sh: no fuzz targets found\n'
	exit 1
fi

failed=0
start=$(date +%s)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	log="$logs/$(printf '%s' "$pkg.$name" | tr '/' '_').log"
	t0=$(date +%s.%N)
	rc=0
	for attempt in 1 2; do
		rc=0
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime "${secs}s" \
			${parallel[@]+"${parallel[@]}"} "$pkg" >"$log" 2>&1 || rc=$?
		# A failure that is only the fuzzing engine's own "context deadline
		# exceeded" (a worker that did not answer before -fuzztime ran out,
		# on a loaded machine) found no input: run the target once more. A
		# real finding says "Failing input written to" and is never retried.
		if [ "$rc" -ne 0 ] && [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
			! grep -q 'Failing input written to' "$log"; then
			printf 'fuzz.sh: %s %s: the fuzzing engine timed out without a finding; running it again\n' "$pkg" "$name" >&2
			continue
		fi
		break
	done
	took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}')
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -n 1 | awk '{print $2}' || true)
	if [ "$rc" -eq 0 ]; then
		printf 'ok  \t%s\t%s\t%s\t(%s execs)\n' "$pkg" "$name" "$took" "${execs:-0}"
	else
		failed=$((failed + 1))
		grep -v '^fuzz: elapsed' "$log" | tail -n 40
		printf 'FAIL\t%s\t%s\t%s\n' "$pkg" "$name" "$took"
	fi
done

total=$(($(date +%s) - start))
if [ "$failed" -gt 0 ]; then
	printf 'FAIL\tfuzz: %d of %d targets failed (%d s each, %d s in all)\n' "$failed" "${#targets[@]}" "$secs" "$total"
	exit 1
fi
printf 'ok  \tfuzz: %d targets (%d s each, %d s in all)\n' "${#targets[@]}" "$secs" "$total"
