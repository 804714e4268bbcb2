#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need
# (kcat, curl, MariaDB, PostgreSQL, Prometheus' promtool, Chromium, PHP and
# systemd-analyze from Debian, helm and the Versity S3 Gateway from their Go
# modules, Apache Kafka, Hadoop's HDFS minicluster and Iceberg's REST catalog
# fixture from Maven Central, Confluent's Python client from PyPI), starts a
# real Kafka broker, real MariaDB and PostgreSQL servers, an S3-compatible
# store (scripts/s3.sh), HDFS (scripts/hdfs.sh) and an Iceberg REST catalog
# (scripts/iceberg-rest.sh), runs the linters and every Go test against them,
# stops them.
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
command -v mariadbd >/dev/null || need+=(mariadb-server mariadb-client)
[ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql)
command -v promtool >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v php >/dev/null || need+=(php-cli)
command -v systemd-analyze >/dev/null || need+=(systemd) # verifies deploy/systemd
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "missing ${need[*]}: run as root or install them with apt-get"
		exit 1
	fi
	log "installing ${need[*]} from Debian"
	export DEBIAN_FRONTEND=noninteractive
	# Keep the packages' scripts from starting the system's default MariaDB and
	# PostgreSQL (scripts/db.sh runs its own): policy-rc.d denies, 101.
	policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
	[ -z "$policy" ] || rm -f "$policy"
fi

# 2. Go tools (pinned), installed into the Go bin dir.
gobin=$(go env GOPATH)/bin
export PATH="$gobin:$PATH"
if ! golangci-lint version 2>/dev/null | grep -q 'version 2.15.0'; then
	log "installing golangci-lint v2.15.0"
	go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
fi
# helm, for the chart in deploy/helm (go test ./deploy renders it): a tool
# built from its Go module, not a dependency of this one (its own version
# string says v3.22 only; the module version is in the binary).
if ! go version -m "$gobin/helm" 2>/dev/null | grep -q 'mod[[:space:]]*helm.sh/helm/v3[[:space:]]*v3.22.0[[:space:]]'; then
	log "installing helm v3.22.0"
	go install helm.sh/helm/v3/cmd/helm@v3.22.0
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

# 4. Real Kafka broker, MariaDB, PostgreSQL, S3 store, HDFS and Iceberg REST catalog
# for the integration tests.
# Their fixed ports (and the fault tests' brokers, 39000-39999) lie inside
# Linux's ephemeral range (32768-60999): a client connection could be given
# one as its local port just before a server binds it, which then dies with
# "address in use" (seen once for a cluster node, once for MariaDB). As
# root, keep the kernel from handing them out (until reboot).
reserved=/proc/sys/net/ipv4/ip_local_reserved_ports
if [ -w "$reserved" ]; then
	cur=$(cat "$reserved")
	printf '%s\n' "${cur:+$cur,}33306,35432,${EVENTLOGGING_HDFS_PORT:-38020},${EVENTLOGGING_HDFS_HTTP_PORT:-38070},${EVENTLOGGING_S3_PORT:-38333},${EVENTLOGGING_ICEBERG_REST_PORT:-38181},39000-39999" >"$reserved" ||
		log "could not reserve the servers' ports in $reserved"
fi
scripts/kafka.sh fetch
hdfs_env=$(mktemp) hdfs_pid=
# The fault tests start and stop brokers of their own (a 3-node cluster,
# a broker on 39592); they stop them when they end, and so does this trap
# (after HDFS's start, should it still run, has ended).
trap '{ [ -z "$hdfs_pid" ] || wait "$hdfs_pid" || true; } 2>/dev/null; rm -f "$hdfs_env"; scripts/iceberg-rest.sh stop || true; scripts/hdfs.sh stop || true; scripts/s3.sh stop || true; scripts/db.sh stop || true; KAFKA_SCRAM=1 KAFKA_PORT=39692 scripts/kafka.sh stop || true; scripts/kafka-cluster.sh stop || true; KAFKA_PORT=39592 scripts/kafka.sh stop || true; scripts/kafka.sh stop || true' EXIT
# HDFS (a JVM, several seconds) starts while Kafka and the databases do; its
# installation (Hadoop's jars with Maven, pinned in scripts/hdfs/pom.xml) too.
scripts/hdfs.sh start --fresh >"$hdfs_env" &
hdfs_pid=$!
EVENTLOGGING_KAFKA_BROKERS=$(scripts/kafka.sh start --fresh)
export EVENTLOGGING_KAFKA_BROKERS
log "Kafka at $EVENTLOGGING_KAFKA_BROKERS"
# A second broker whose only client listener is SASL/SCRAM (TestKafkaSCRAM).
export EVENTLOGGING_KAFKA_SCRAM_USER=eventlogging EVENTLOGGING_KAFKA_SCRAM_PASSWORD=eventlogging-secret
EVENTLOGGING_KAFKA_SCRAM_BROKERS=$(KAFKA_SCRAM=1 KAFKA_PORT=39692 KAFKA_SCRAM_USER=$EVENTLOGGING_KAFKA_SCRAM_USER \
	KAFKA_SCRAM_PASSWORD=$EVENTLOGGING_KAFKA_SCRAM_PASSWORD scripts/kafka.sh start --fresh)
export EVENTLOGGING_KAFKA_SCRAM_BROKERS
log "Kafka with SCRAM at $EVENTLOGGING_KAFKA_SCRAM_BROKERS"
dsns=$(scripts/db.sh start) # not inside eval, so that a failure stops the run
eval "$dsns"
export EVENTLOGGING_MYSQL_DSN EVENTLOGGING_POSTGRES_DSN
# The object stores of the file sink's targets (internal/testsupport S3, HDFS).
# The S3 store's start installs it first (versitygw with go install, pinned in
# scripts/s3.sh). A store that does not start fails the run under CI=true;
# elsewhere its tests skip, saying so.
if s3env=$(scripts/s3.sh start --fresh); then
	eval "$s3env"
	export EVENTLOGGING_S3_ENDPOINT EVENTLOGGING_S3_REGION EVENTLOGGING_S3_ACCESS_KEY EVENTLOGGING_S3_SECRET_KEY
	log "S3 store at $EVENTLOGGING_S3_ENDPOINT"
elif [ "${CI:-}" = true ]; then
	log "the S3 store did not start"
	exit 1
else
	log "the S3 store did not start: its tests will skip"
fi
if wait "$hdfs_pid"; then
	eval "$(cat "$hdfs_env")"
	export EVENTLOGGING_HDFS_NAMENODE
	log "HDFS at $EVENTLOGGING_HDFS_NAMENODE"
elif [ "${CI:-}" = true ]; then
	log "HDFS did not start"
	exit 1
else
	log "HDFS did not start: its tests will skip"
fi
# The Iceberg REST catalog (internal/testsupport IcebergREST): Apache Iceberg's
# REST catalog fixture, its jars fetched with Maven (pinned in
# scripts/iceberg-rest/pom.xml) once HDFS's are, which it shares.
if icebergenv=$(scripts/iceberg-rest.sh start --fresh); then
	eval "$icebergenv"
	export EVENTLOGGING_ICEBERG_REST_URL EVENTLOGGING_ICEBERG_REST_WAREHOUSE
	log "Iceberg REST catalog at $EVENTLOGGING_ICEBERG_REST_URL"
elif [ "${CI:-}" = true ]; then
	log "the Iceberg REST catalog did not start"
	exit 1
else
	log "the Iceberg REST catalog did not start: its tests will skip"
fi

# 5. Build, lint, test. The last lines are go test's summary.
go build ./...
# go.mod and go.sum say exactly what the code imports.
if ! go mod tidy -diff; then
	log "go.mod/go.sum are not tidy: run go mod tidy"
	exit 1
fi
go vet ./...
golangci-lint run --allow-parallel-runners ./...
helm lint --strict deploy/helm/eventlogging
# Every fuzz target for a few seconds (their seed corpora also run in the
# main pass); the load and fault tests (docs/reliability.md) measure, so
# they run without the race detector, one after another (they skip under
# -race; EVENTLOGGING_LONG_FAULTS=1 makes the fault runs long), and so do
# the 100,000-event runs into S3, HDFS and Iceberg (and three sinks sharing
# one S3 or HDFS target), then the 5-minute chaos soak; then every test
# with -race.
load_rc=0
if [ $# -eq 0 ]; then
	scripts/fuzz.sh "${FUZZ_SECONDS:-4}" || load_rc=$?
	fault_timeout=40m
	[ "${EVENTLOGGING_LONG_FAULTS:-}" = 1 ] && fault_timeout=120m
	go test -count=1 -timeout "$fault_timeout" -p 1 -v \
		-run '^(TestDashboardUnderLoad|TestHostileRequestsWithTraffic|TestOverload|TestClusterFailover|TestClientPHPKafkaLeaderKill|TestProcessCrashes|TestSpoolDiskFull|TestBrokerDown|TestWarehouse|TestFileSinksShareTarget|TestIcebergStandalone)$' \
		./test/e2e || load_rc=$?
	# The chaos soak (docs/reliability.md): a whole deployment under one
	# fault after another; SOAK_SEED picks another fault schedule,
	# SOAK_MINUTES a longer run.
	scripts/soak.sh --minutes "${SOAK_MINUTES:-5}" --seed "${SOAK_SEED:-1}" || load_rc=$?
fi
go test -count=1 -race -timeout 20m "$@" ./...
exit "$load_rc"
