#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need
# (kcat and curl from Debian, Apache Kafka from Maven Central, Confluent's
# Python client from PyPI), starts a real Kafka
# broker, runs the linters and every Go test against it, stops the broker.
#
#   scripts/test.sh            everything
#   scripts/test.sh -run Foo   extra arguments go to `go test`
#
# Under CI=true no integration test may skip: a missing service fails the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }

# 1. System packages (Debian). Only installed when missing.
need=()
command -v kcat >/dev/null || need+=(kcat)
command -v curl >/dev/null || need+=(curl)
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "missing ${need[*]}: run as root or install them with apt-get"
		exit 1
	fi
	log "installing ${need[*]} from Debian"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

# 2. Go tools (pinned), installed into the Go bin dir.
gobin=$(go env GOPATH)/bin
export PATH="$gobin:$PATH"
if ! golangci-lint version 2>/dev/null | grep -q 'version 2.15.0'; then
	log "installing golangci-lint v2.15.0"
	go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
fi

# 3. Python clients for the interop tests (Confluent's), in a cached virtualenv.
venv=${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging/venv
reqs=scripts/python-requirements.txt
if ! cmp -s "$reqs" "$venv/requirements.txt" 2>/dev/null; then
	log "installing Python interop clients into $venv"
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$reqs"
	cp "$reqs" "$venv/requirements.txt"
fi
export EVENTLOGGING_PYTHON="$venv/bin/python"

# 4. Real Kafka broker for the integration tests.
scripts/kafka.sh fetch
trap 'scripts/kafka.sh stop || true' EXIT
EVENTLOGGING_KAFKA_BROKERS=$(scripts/kafka.sh start --fresh)
export EVENTLOGGING_KAFKA_BROKERS
log "Kafka at $EVENTLOGGING_KAFKA_BROKERS"

# 5. Build, lint, test. The last lines are go test's summary.
go build ./...
go vet ./...
golangci-lint run ./...
go test -count=1 -race -timeout 20m "$@" ./...
