# shellcheck shell=bash
# The steps that the development-server scripts (kafka.sh, kafka-cluster.sh,
# db.sh, s3.sh, hdfs.sh, iceberg-rest.sh) have in common: each starts a server
# on loopback for the tests, waits until it answers, stops it and says how it
# is. Sourced by them, never run:
#
#   here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
#   . "$here/lib/server.sh"
#
# Messages go to stderr, prefixed with the script's name; stdout is kept for
# what callers read (a bootstrap address, NAME='value' lines to eval).
# A PIDFILE holds the pid of the server process a script started. A CHECK is
# a command and its arguments (usually the script's own `answers`) that
# succeeds when the server answers a real request.

# prog is the script's name, as its messages and its log's start marks begin.
prog=${0##*/}

log() { printf '%s: %s\n' "$prog" "$*" >&2; }

# usage prints the script's leading comment (up to its `set -euo`) and exits 2.
usage() {
	sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
	exit 2
}

# need CMD [HINT] exits 1 when CMD is not on the PATH, with HINT (how to
# install it) in the message.
need() {
	command -v "$1" >/dev/null || {
		log "$1 not found${2:+ ($2)}"
		exit 1
	}
}

# env_lines NAME VALUE... prints NAME='VALUE' lines for callers to eval: quoted,
# as values such as the MySQL DSN hold ( ) & ? (no value holds a quote).
env_lines() { printf "%s='%s'\n" "$@"; }

# pom_property POM NAME prints the <NAME> property of a Maven pom (where the
# versions are pinned).
pom_property() { sed -n "s:.*<$2>\(.*\)</$2>.*:\1:p" "$1"; }

# fetch_jars POM LIBS WHAT CHECK... copies the pom's runtime dependencies into
# LIBS with Maven, unless an earlier fetch finished: LIBS/.complete marks one
# whose CHECK succeeded. Maven's output goes to stderr.
fetch_jars() {
	local pom=$1 libs=$2 what=$3
	shift 3
	if [ -f "$libs/.complete" ]; then
		return 0
	fi
	need mvn "apt-get install maven"
	log "fetching $what with Maven into $libs"
	rm -rf "$libs"
	mkdir -p "$libs"
	mvn -B -q -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
		-DoutputDirectory="$libs" -DincludeScope=runtime >&2
	"$@" >/dev/null
	touch "$libs/.complete"
}

# quietly LOGFILE CMD... runs CMD with its output in LOGFILE, shown (and exit
# 1) only when it fails.
quietly() {
	local out=$1
	shift
	"$@" >"$out" 2>&1 || {
		cat "$out" >&2
		exit 1
	}
}

# fail_with_log LOGFILE MESSAGE says MESSAGE, shows the last 40 lines of
# LOGFILE and exits 1.
fail_with_log() {
	log "$2"
	tail -n 40 "$1" >&2
	exit 1
}

# pid_alive PIDFILE succeeds when the process of PIDFILE runs.
pid_alive() {
	[ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# port_taken PORT succeeds when something accepts connections on 127.0.0.1:PORT.
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ports_free PIDFILE VARS PORT... exits 1 when something listens on one of the
# ports although PIDFILE's server (checked first) does not run: the server
# would die with "address in use" while that one answers, and stop would
# leave it running. VARS names the variables that move the ports.
ports_free() {
	local pidfile=$1 vars=$2 p
	shift 2
	for p in "$@"; do
		if port_taken "$p"; then
			log "port $p is taken by a process this script did not start (pid file $pidfile); stop it or set $vars"
			exit 1
		fi
	done
}

# spawn PIDFILE LOGFILE CMD... starts CMD in the background, detached from the
# terminal, its output appended to LOGFILE after a line "PROG: starting TIME"
# that marks where this run's output begins, and writes its pid to PIDFILE.
spawn() {
	local pidfile=$1 out=$2
	shift 2
	printf '%s: starting %s\n' "$prog" "$(date -u +%FT%TZ)" >>"$out"
	nohup "$@" >>"$out" 2>&1 </dev/null &
	echo $! >"$pidfile"
}

# wait_ready WHAT PID LOGFILE SECONDS PAUSE LATE CHECK... runs CHECK (quietly)
# every PAUSE seconds until it succeeds while process PID runs. It exits 1,
# with the last lines of LOGFILE, when PID exits first ("WHAT exited during
# start-up") or SECONDS pass (then saying LATE).
wait_ready() {
	local what=$1 pid=$2 out=$3 deadline=$((SECONDS + $4)) pause=$5 late=$6
	shift 6
	until kill -0 "$pid" 2>/dev/null && "$@" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			fail_with_log "$out" "$what exited during start-up; last log lines:"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			fail_with_log "$out" "$late"
		fi
		sleep "$pause"
	done
}

# await_exit WHAT PID SECONDS PAUSE waits for process PID (asked to stop) to
# exit, looking every PAUSE seconds; after SECONDS it sends SIGKILL.
await_exit() {
	local what=$1 pid=$2 secs=$3 pause=$4
	local deadline=$((SECONDS + secs))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$what did not stop within ${secs}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep "$pause"
	done
}

# terminate WHAT PIDFILE SECONDS PAUSE sends the running process of PIDFILE
# SIGTERM, and SIGCONT (a paused process acts on the TERM only once
# continued), waits for it to exit as await_exit does and removes PIDFILE.
terminate() {
	local what=$1 pidfile=$2 pid
	pid=$(cat "$pidfile")
	kill -TERM "$pid"
	kill -CONT "$pid" 2>/dev/null || true
	await_exit "$what" "$pid" "$3" "$4"
	rm -f "$pidfile"
}

# stop_hung WHAT PIDFILE [HINT], in a start, when the server did not answer:
# if it runs all the same, it is stopped with the script's own stop, saying
# so (with HINT, what may be wrong).
stop_hung() {
	if pid_alive "$2"; then
		log "$1 (pid $(cat "$2")) does not answer${3:+ ($3)}; stopping it"
		stop
	fi
}

# stop_server WHAT PIDFILE SECONDS PAUSE is a script's stop: terminate the
# server if it runs, saying so either way.
stop_server() {
	if ! pid_alive "$2"; then
		log "not running"
		return 0
	fi
	terminate "$@"
	log "stopped"
}

# signal_server PIDFILE SIG DONE sends SIG to the process of PIDFILE and says
# DONE (paused, resumed); it exits 1 when that does not run.
signal_server() {
	local pidfile=$1 sig=$2 said=$3
	pid_alive "$pidfile" || {
		log "not running"
		exit 1
	}
	kill -"$sig" "$(cat "$pidfile")"
	log "$said (pid $(cat "$pidfile"))"
}

# resume_server WHAT PIDFILE SECONDS PAUSE CHECK... continues a paused server
# and waits up to SECONDS, looking every PAUSE seconds, until CHECK succeeds.
resume_server() {
	local what=$1 pidfile=$2 deadline=$((SECONDS + $3)) pause=$4
	shift 4
	signal_server "$pidfile" CONT resumed
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "$what does not answer after resume"
			exit 1
		fi
		sleep "$pause"
	done
}
