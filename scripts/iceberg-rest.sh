#!/usr/bin/env bash
# A real Apache Iceberg REST catalog for the integration tests: Apache
# Iceberg's own REST catalog test fixture (org.apache.iceberg.rest.RESTCatalogServer,
# the server of the apache/iceberg-rest-fixture image), from iceberg-open-api's
# test-fixtures jar on Maven Central, backed by Iceberg's JdbcCatalog on a
# SQLite file and a local warehouse directory, both in the run dir.
#
#   scripts/iceberg-rest.sh fetch     download the jars (cached) with Maven
#   scripts/iceberg-rest.sh start [--fresh]
#                             fetch, start the catalog (keeping the catalog and warehouse
#                             of an earlier run unless --fresh), wait until it answers
#                             GET /v1/config, print the environment for the tests
#   scripts/iceberg-rest.sh stop      SIGTERM the server and wait for it to exit (data is
#                             kept; `start` brings it back with the same tables)
#   scripts/iceberg-rest.sh status    print the environment if the catalog answers
#
# The environment goes to stdout, one NAME='value' per line, so
# `eval "$(scripts/iceberg-rest.sh start)"` sets it:
#   EVENTLOGGING_ICEBERG_REST_URL        http://127.0.0.1:PORT, the catalog's base URL
#                                        (no credentials needed: the fixture hands any
#                                        OAuth2 client credential a token and checks none)
#   EVENTLOGGING_ICEBERG_REST_WAREHOUSE  file:///…/warehouse: where the server puts every
#                                        table (<warehouse>/<namespace>/<table>), whatever
#                                        warehouse a client asks for
# internal/testsupport (IcebergREST) gives each test a namespace of its own.
#
# The fixture's Jetty listens on every interface (it takes a port, no host);
# the tests use 127.0.0.1 only.
#
# Environment:
#   EVENTLOGGING_ICEBERG_REST_PORT  port (default 38181)
#   ICEBERG_REST_HEAP               JVM heap (default 256m)
#   ICEBERG_REST_CACHE_DIR          where jars are cached (default ${XDG_CACHE_HOME:-~/.cache}/eventlogging)
#   ICEBERG_REST_RUN_DIR            catalog database, warehouse, log and pid file
#                                   (default ${TMPDIR:-/tmp}/eventlogging-iceberg-rest-$EVENTLOGGING_ICEBERG_REST_PORT)
#
# The versions (Iceberg, Jetty, the SQLite driver, Hadoop's client) are pinned
# in scripts/iceberg-rest/pom.xml and nowhere else.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"
pom="$here/iceberg-rest/pom.xml"
version=$(pom_property "$pom" iceberg.version)
port=${EVENTLOGGING_ICEBERG_REST_PORT:-38181}
heap=${ICEBERG_REST_HEAP:-256m}
cache=${ICEBERG_REST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eventlogging}
# Keyed by the pom's checksum: any pin changed fetches again.
libs="$cache/iceberg-rest-$version-$(sha256sum "$pom" | cut -c1-12)/libs"
run=$(realpath -m "${ICEBERG_REST_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-iceberg-rest-$port}")
pidfile="$run/iceberg-rest.pid"
url="http://127.0.0.1:$port"
warehouse="file://$run/warehouse"

print_env() {
	env_lines EVENTLOGGING_ICEBERG_REST_URL "$url" EVENTLOGGING_ICEBERG_REST_WAREHOUSE "$warehouse"
}

fetch() {
	fetch_jars "$pom" "$libs" "Apache Iceberg $version's REST catalog fixture" \
		ls "$libs/iceberg-open-api-$version-test-fixtures.jar"
}

# answers succeeds when the catalog answers GET /v1/config (a real catalog
# request, not a port probe) within 2 s.
answers() {
	curl -sf -o /dev/null --max-time 2 "$url/v1/config"
}

start() {
	need java
	need curl "apt-get install curl"
	fetch
	if pid_alive "$pidfile" && answers; then
		log "already running at $url"
		print_env
		return 0
	fi
	stop_hung server "$pidfile"
	ports_free "$pidfile" EVENTLOGGING_ICEBERG_REST_PORT "$port"
	if [ "${1:-}" = "--fresh" ]; then
		rm -rf "$run"
	fi
	mkdir -p "$run/warehouse"
	log "starting the Apache Iceberg $version REST catalog fixture at $url (run dir $run)"
	# RESTCatalogServer reads its catalog's properties from CATALOG_* variables
	# ("__" is "-", "_" is "."): uri, warehouse, rest.port. A short-lived test
	# server: C1 only and the serial collector start fastest.
	spawn "$pidfile" "$run/iceberg-rest.log" \
		env CATALOG_URI="jdbc:sqlite:$run/catalog.db" CATALOG_WAREHOUSE="$warehouse" CATALOG_REST_PORT="$port" \
		java -cp "$libs/*" -Xms64m -Xmx"$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
		-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		org.apache.iceberg.rest.RESTCatalogServer
	wait_ready server "$(cat "$pidfile")" "$run/iceberg-rest.log" 60 0.1 "server did not answer within 60s; last log lines:" answers
	log "ready at $url after ${SECONDS}s"
	print_env
}

stop() { stop_server server "$pidfile" 30 0.1; }

case "${1:-}" in
fetch) fetch ;;
start) start "${2:-}" ;;
stop) stop ;;
status) if answers; then print_env; else log "not answering at $url"; exit 1; fi ;;
*) usage ;;
esac
