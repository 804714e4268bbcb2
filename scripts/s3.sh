#!/usr/bin/env bash
# A real S3-compatible object store for the integration tests: the Versity S3
# Gateway (versitygw) with its POSIX backend, built from its Go module.
#
#   scripts/s3.sh install     go install versitygw (pinned below) into $(go env GOPATH)/bin,
#                             unless the binary there is already that version
#   scripts/s3.sh start [--fresh]
#                             install, start the gateway on 127.0.0.1 (keeping the buckets
#                             of an earlier run unless --fresh), wait until it answers a
#                             signed ListBuckets, print the environment for the tests
#   scripts/s3.sh stop        SIGTERM the gateway and wait for it to exit (data is kept;
#                             `start` brings it back with the same buckets and objects)
#   scripts/s3.sh pause       SIGSTOP the gateway: connections are still accepted by the
#                             kernel but nothing answers (requests hang until they time out)
#   scripts/s3.sh resume      SIGCONT it; nothing is lost
#   scripts/s3.sh status      print the environment if the gateway answers
#
# For a fault test: `pause`/`resume` makes the store hang, `stop`/`start` makes it
# refuse connections; both bring it back with its data intact.
# scripts/test.sh shares one instance among all the packages' tests, which run
# in parallel: a fault test should pause or stop one of its own, on a port of
# its own in 39000-39999 (reserved by test.sh), e.g.
#   EVENTLOGGING_S3_PORT=39333 scripts/s3.sh start
# (the run dir follows the port).
#
# The environment goes to stdout, one NAME='value' per line, so
# `eval "$(scripts/s3.sh start)"` sets it:
#   EVENTLOGGING_S3_ENDPOINT    http://127.0.0.1:PORT (path-style addressing)
#   EVENTLOGGING_S3_REGION      us-east-1
#   EVENTLOGGING_S3_ACCESS_KEY  eventlogging
#   EVENTLOGGING_S3_SECRET_KEY  eventlogging-secret
# internal/testsupport gives each test a bucket of its own.
#
# Environment:
#   EVENTLOGGING_S3_PORT  port on 127.0.0.1 (default 38333)
#   S3_RUN_DIR            data, log and pid file (default ${TMPDIR:-/tmp}/eventlogging-s3-$EVENTLOGGING_S3_PORT)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"
module=github.com/versity/versitygw
version=v1.8.0
port=${EVENTLOGGING_S3_PORT:-38333}
run=$(realpath -m "${S3_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-s3-$port}")
pidfile="$run/s3.pid"
endpoint="http://127.0.0.1:$port"
region=us-east-1
access_key=eventlogging
secret_key=eventlogging-secret

print_env() {
	env_lines EVENTLOGGING_S3_ENDPOINT "$endpoint" EVENTLOGGING_S3_REGION "$region" \
		EVENTLOGGING_S3_ACCESS_KEY "$access_key" EVENTLOGGING_S3_SECRET_KEY "$secret_key"
}

gobin() { echo "$(go env GOPATH)/bin"; }

install() {
	need go
	local bin
	bin="$(gobin)/versitygw"
	# The module version is in the binary (versitygw's own --version may say otherwise).
	if go version -m "$bin" 2>/dev/null | grep -q "mod[[:space:]]*${module}[[:space:]]*${version}[[:space:]]"; then
		return 0
	fi
	log "installing versitygw $version into $(gobin)"
	(cd / && go install "$module/cmd/versitygw@$version")
}

# answers succeeds when the gateway answers a signed ListBuckets (a real S3
# request, not a port probe) within 2 s. S3 wants the payload hash as a
# header (that of the empty body here); curl then signs it too.
answers() {
	curl -sf -o /dev/null --max-time 2 --aws-sigv4 "aws:amz:$region:s3" --user "$access_key:$secret_key" \
		-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' "$endpoint/"
}

start() {
	need curl "apt-get install curl"
	install
	if pid_alive "$pidfile" && answers; then
		log "already running at $endpoint"
		print_env
		return 0
	fi
	stop_hung gateway "$pidfile" "paused? try scripts/s3.sh resume"
	ports_free "$pidfile" EVENTLOGGING_S3_PORT "$port"
	if [ "${1:-}" = "--fresh" ]; then
		rm -rf "$run"
	fi
	# Object metadata (ETags, content types, multipart state) goes to a sidecar
	# directory, so the data directory's file system needs no xattr support.
	mkdir -p "$run/data" "$run/meta"
	log "starting versitygw $version at $endpoint (run dir $run)"
	spawn "$pidfile" "$run/s3.log" env ROOT_ACCESS_KEY_ID="$access_key" ROOT_SECRET_ACCESS_KEY="$secret_key" \
		"$(gobin)/versitygw" --port "127.0.0.1:$port" --region "$region" --quiet \
		posix --sidecar "$run/meta" "$run/data"
	wait_ready gateway "$(cat "$pidfile")" "$run/s3.log" 60 0.1 "gateway did not answer within 60s; last log lines:" answers
	log "ready at $endpoint after ${SECONDS}s"
	print_env
}

stop() { stop_server gateway "$pidfile" 30 0.1; }

case "${1:-}" in
install) install ;;
start) start "${2:-}" ;;
stop) stop ;;
pause) signal_server "$pidfile" STOP paused ;;
resume) resume_server gateway "$pidfile" 30 0.1 answers ;;
status) if answers; then print_env; else log "not answering at $endpoint"; exit 1; fi ;;
*) usage ;;
esac
