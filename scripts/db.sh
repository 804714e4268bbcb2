#!/usr/bin/env bash
# Real MariaDB and PostgreSQL servers for the integration tests, from Debian's
# packages (mariadb-server, postgresql: PostgreSQL 15), never the system's
# default instances.
#
#   scripts/db.sh start [mariadb|postgres]
#                             initialise a data directory if the run dir has none,
#                             start the server on 127.0.0.1, wait until it answers,
#                             create user and database eventlogging_test, print the DSN
#   scripts/db.sh stop [mariadb|postgres]
#                             shut the server down cleanly and wait for it to exit
#   scripts/db.sh status [mariadb|postgres]
#                             print the DSN of each server that answers
#
# Without a second argument both servers are meant. DSNs go to stdout, one
# NAME='value' per line, so `eval "$(scripts/db.sh start)"` sets them:
#   EVENTLOGGING_MYSQL_DSN     go-sql-driver/mysql form
#   EVENTLOGGING_POSTGRES_DSN  postgres:// URL (pgx, libpq)
# User eventlogging (password eventlogging) owns eventlogging_test and may create
# further databases: on MariaDB those named eventlogging_test*, on PostgreSQL any.
# internal/dbtest gives each test a database of its own.
#
# Environment:
#   MARIADB_PORT   MariaDB port on 127.0.0.1 (default 33306)
#   POSTGRES_PORT  PostgreSQL port on 127.0.0.1 (default 35432)
#   DB_RUN_DIR     data, sockets, logs and pid files (default ${TMPDIR:-/tmp}/eventlogging-db);
#                  as root the servers run as the mysql and postgres OS users,
#                  which must be able to reach it
set -euo pipefail
PATH=$PATH:/usr/sbin # mariadbd and runuser, for users whose PATH lacks it

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/server.sh
. "$here/lib/server.sh"

mport=${MARIADB_PORT:-33306}
pport=${POSTGRES_PORT:-35432}
run=${DB_RUN_DIR:-${TMPDIR:-/tmp}/eventlogging-db}
pgbin=/usr/lib/postgresql/15/bin
mysql_dsn="eventlogging:eventlogging@tcp(127.0.0.1:$mport)/eventlogging_test?parseTime=true&multiStatements=false"
postgres_dsn="postgres://eventlogging:eventlogging@127.0.0.1:$pport/eventlogging_test?sslmode=disable"

if [ "$(id -u)" -eq 0 ]; then
	myuser=mysql
	pguser=postgres
else
	myuser=$(id -un)
	pguser=$(id -un)
fi

# as runs a command as the given OS user, from / so that an unreadable working
# directory (root's home) does not matter.
as() {
	local user=$1
	shift
	if [ "$user" = "$(id -un)" ]; then
		(cd / && "$@")
	else
		(cd / && runuser -u "$user" -- "$@")
	fi
}

# prepare makes the server's directory under the run dir, owned by its OS user.
prepare() {
	local user=$1 dir=$2
	[ -d "$run" ] || (umask 022 && mkdir -p "$run")
	run=$(cd "$run" && pwd)
	if [ "${#run}" -gt 80 ]; then
		log "run dir path too long for the servers' Unix sockets: $run (set DB_RUN_DIR)"
		exit 1
	fi
	mkdir -p "$run/$dir"
	chown "$user:" "$run/$dir"
	chmod 0700 "$run/$dir"
	if ! as "$user" test -w "$run/$dir"; then
		log "OS user $user cannot write $run/$dir: set DB_RUN_DIR to a directory it can reach"
		exit 1
	fi
}

# wait_for WHAT PID LOGFILE CHECK... waits up to 60s for a server to answer
# CHECK, while its process PID runs.
wait_for() {
	local what=$1 pid=$2 logfile=$3
	shift 3
	wait_ready "$what" "$pid" "$logfile" 60 0.2 "$what did not answer within 60s; last log lines:" "$@"
}

# port_free waits up to 30 s for nothing to listen on 127.0.0.1:$1 (a
# server of an earlier run that is still shutting down), then fails saying
# who to stop.
port_free() {
	local port=$1 what=$2 i
	for i in $(seq 30); do
		port_taken "$port" || return 0
		[ "$i" -gt 1 ] || log "port $port is taken; waiting up to 30s for it to be released"
		sleep 1
	done
	log "port $port is still taken by a process this script did not start; stop it before starting $what"
	exit 1
}

# already_up WHAT PORT ANSWERS ENV, for a server that runs, succeeds when user
# eventlogging can connect to it (ANSWERS), printing the DSN (ENV); otherwise
# it says that the user is set up again.
already_up() {
	local what=$1 port=$2 answers=$3 env=$4
	if "$answers"; then
		log "$what already running at 127.0.0.1:$port"
		"$env"
		return 0
	fi
	log "$what running but user eventlogging cannot connect; setting it up again"
	return 1
}

# ready WHAT PORT ANSWERS ENV ends a start: user eventlogging must be able to
# connect over TCP (ANSWERS); then it prints the DSN (ENV).
ready() {
	local what=$1 port=$2 answers=$3 env=$4
	"$answers" || {
		log "$what is up but user eventlogging cannot connect over TCP"
		exit 1
	}
	log "$what ready at 127.0.0.1:$port after ${SECONDS}s"
	"$env"
}

# running WHAT CHECK, before a stop, makes the run dir's path absolute and
# succeeds when CHECK says the server runs; otherwise it says it does not.
running() {
	local what=$1 check=$2
	if run=$(cd "$run" 2>/dev/null && pwd) && "$check"; then
		return 0
	fi
	log "$what not running"
	return 1
}

# MariaDB: data, socket, pid file and error log under $run/mariadb.

my_dir() { echo "$run/mariadb"; }

# my_admin runs a client as the server's unix_socket-authenticated superuser:
# root when we are root, otherwise our own login (mariadb-install-db creates both).
my_admin() {
	local cmd=$1
	shift
	"$cmd" --no-defaults --socket="$(my_dir)/mariadb.sock" --user="$(id -un)" "$@"
}

my_pid_alive() { pid_alive "$(my_dir)/mariadb.pid"; }

my_env() { env_lines EVENTLOGGING_MYSQL_DSN "$mysql_dsn"; }

my_answers() {
	mariadb --no-defaults --protocol=tcp --host=127.0.0.1 --port="$mport" \
		--user=eventlogging --password=eventlogging --connect-timeout=2 \
		--execute='SELECT 1' eventlogging_test >/dev/null 2>&1
}

my_start() {
	need mariadbd "apt-get install mariadb-server mariadb-client"
	prepare "$myuser" mariadb
	local dir pid owner=()
	dir=$(my_dir)
	[ "$(id -u)" -ne 0 ] || owner=(--user="$myuser")
	if my_pid_alive; then
		if already_up MariaDB "$mport" my_answers my_env; then
			return 0
		fi
		pid=$(cat "$dir/mariadb.pid")
	else
		if [ ! -d "$dir/data/mysql" ]; then
			log "initialising MariaDB data directory $dir/data"
			rm -rf "$dir/data"
			quietly "$dir/install.log" mariadb-install-db --no-defaults "${owner[@]}" --datadir="$dir/data" \
				--skip-test-db --skip-name-resolve --innodb-log-file-size=16M
		fi
		port_free "$mport" MariaDB
		log "starting MariaDB at 127.0.0.1:$mport (run dir $dir)"
		nohup mariadbd --no-defaults "${owner[@]}" --datadir="$dir/data" \
			--socket="$dir/mariadb.sock" --pid-file="$dir/mariadb.pid" \
			--bind-address=127.0.0.1 --port="$mport" --skip-name-resolve \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
			--innodb-buffer-pool-size=32M --innodb-log-file-size=16M --innodb-log-buffer-size=4M \
			--innodb-flush-log-at-trx-commit=2 --key-buffer-size=1M --performance-schema=OFF \
			--max-connections=200 </dev/null >>"$dir/mariadb.log" 2>&1 &
		pid=$!
	fi
	wait_for MariaDB "$pid" "$dir/mariadb.log" my_admin mariadb-admin ping
	my_admin mariadb <<'EOF'
CREATE USER IF NOT EXISTS 'eventlogging'@'127.0.0.1', 'eventlogging'@'localhost';
ALTER USER 'eventlogging'@'127.0.0.1' IDENTIFIED BY 'eventlogging';
ALTER USER 'eventlogging'@'localhost' IDENTIFIED BY 'eventlogging';
CREATE DATABASE IF NOT EXISTS eventlogging_test CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
GRANT ALL PRIVILEGES ON `eventlogging\_test%`.* TO 'eventlogging'@'127.0.0.1', 'eventlogging'@'localhost';
EOF
	ready MariaDB "$mport" my_answers my_env
}

my_stop() {
	running MariaDB my_pid_alive || return 0
	local pid
	pid=$(cat "$(my_dir)/mariadb.pid")
	my_admin mariadb-admin shutdown || kill -TERM "$pid" 2>/dev/null || true
	await_exit MariaDB "$pid" 60 0.2
	rm -f "$(my_dir)/mariadb.pid"
	log "MariaDB stopped"
}

# PostgreSQL: data directory and log under $run/postgres, socket in $run/postgres.

pg_dir() { echo "$run/postgres"; }

pg_running() {
	[ -f "$(pg_dir)/data/PG_VERSION" ] && as "$pguser" "$pgbin/pg_ctl" status -D "$(pg_dir)/data" >/dev/null 2>&1
}

pg_answers() {
	PGPASSWORD=eventlogging PGCONNECT_TIMEOUT=2 "$pgbin/psql" -X -q -A -t \
		-h 127.0.0.1 -p "$pport" -U eventlogging -d eventlogging_test -c 'SELECT 1' >/dev/null 2>&1
}

pg_env() { env_lines EVENTLOGGING_POSTGRES_DSN "$postgres_dsn"; }

pg_start() {
	[ -x "$pgbin/initdb" ] || { log "$pgbin/initdb not found (apt-get install postgresql)"; exit 1; }
	prepare "$pguser" postgres
	local dir
	dir=$(pg_dir)
	if pg_running; then
		if already_up PostgreSQL "$pport" pg_answers pg_env; then
			return 0
		fi
	else
		if [ ! -f "$dir/data/PG_VERSION" ]; then
			log "initialising PostgreSQL data directory $dir/data"
			rm -rf "$dir/data"
			quietly "$dir/initdb.log" as "$pguser" "$pgbin/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C.UTF-8 \
				--auth-local=trust --auth-host=scram-sha-256
		fi
		port_free "$pport" PostgreSQL
		log "starting PostgreSQL 15 at 127.0.0.1:$pport (run dir $dir)"
		# pg_ctl hands -o to a shell, hence the inner quotes around the socket dir;
		# it waits (-w) until the server accepts connections or exits.
		if ! as "$pguser" "$pgbin/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/postgres.log" -o "-p $pport -k '$dir' \
-c listen_addresses=127.0.0.1 -c shared_buffers=16MB -c max_connections=200 \
-c synchronous_commit=off -c logging_collector=off" >/dev/null; then
			fail_with_log "$dir/postgres.log" "PostgreSQL did not start; last log lines:"
		fi
	fi
	wait_for PostgreSQL "$(head -n 1 "$dir/data/postmaster.pid")" "$dir/postgres.log" \
		"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pport" -d postgres
	as "$pguser" "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$pport" -U postgres -d postgres <<'EOF' >/dev/null
SELECT 'CREATE ROLE eventlogging' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'eventlogging')\gexec
ALTER ROLE eventlogging LOGIN CREATEDB PASSWORD 'eventlogging';
SELECT 'CREATE DATABASE eventlogging_test OWNER eventlogging' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'eventlogging_test')\gexec
ALTER DATABASE eventlogging_test OWNER TO eventlogging;
EOF
	ready PostgreSQL "$pport" pg_answers pg_env
}

pg_stop() {
	running PostgreSQL pg_running || return 0
	as "$pguser" "$pgbin/pg_ctl" stop -D "$(pg_dir)/data" -m fast -t 60 >/dev/null
	log "PostgreSQL stopped"
}

status() {
	local rc=0
	if [ "$1" != postgres ]; then
		if my_answers; then my_env; else log "MariaDB not answering at 127.0.0.1:$mport"; rc=1; fi
	fi
	if [ "$1" != mariadb ]; then
		if pg_answers; then pg_env; else log "PostgreSQL not answering at 127.0.0.1:$pport"; rc=1; fi
	fi
	return "$rc"
}

which=${2:-all}
case "$which" in
all | mariadb | postgres) ;;
*) log "unknown server $which (want mariadb or postgres)"; exit 2 ;;
esac
case "${1:-}" in
start)
	[ "$which" = postgres ] || my_start
	[ "$which" = mariadb ] || pg_start
	;;
stop)
	[ "$which" = postgres ] || my_stop
	[ "$which" = mariadb ] || pg_stop
	;;
status) status "$which" ;;
*) usage ;;
esac
