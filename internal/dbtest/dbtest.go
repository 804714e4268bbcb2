// Package dbtest gives integration tests a database of their own on the real
// MariaDB and PostgreSQL servers started by scripts/test.sh (or scripts/db.sh start).
//
// Tests call MySQL(t) or Postgres(t). Each call creates a fresh database,
// named after the one in the configured DSN, and drops it when the test ends,
// so tests sharing one server never see each other's tables. When no server is
// configured the test is skipped with a clear message, except under CI=true
// where a missing server is a failure: in CI every integration test must run.
package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// EnvMySQL names the environment variable holding the go-sql-driver/mysql DSN
// of the test MariaDB server, e.g.
// eventlogging:eventlogging@tcp(127.0.0.1:33306)/eventlogging_test?parseTime=true.
const EnvMySQL = "EVENTLOGGING_MYSQL_DSN"

// EnvPostgres names the environment variable holding the postgres:// URL of the
// test PostgreSQL server, e.g.
// postgres://eventlogging:eventlogging@127.0.0.1:35432/eventlogging_test?sslmode=disable.
const EnvPostgres = "EVENTLOGGING_POSTGRES_DSN"

// dropTimeout bounds the DROP DATABASE run at cleanup, after the test's
// context is gone.
const dropTimeout = 30 * time.Second

// MySQL returns a *sql.DB on a fresh MariaDB/MySQL database of its own, and the
// DSN that opens it, or skips (locally) / fails (CI=true) the test when
// EnvMySQL is not set. The database is created with utf8mb4 and dropped at
// cleanup, after db is closed.
func MySQL(tb testing.TB) (db *sql.DB, dsn string) {
	tb.Helper()
	base := lookup(tb, EnvMySQL, "mariadb")
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		tb.Fatalf("dbtest: %s: %v", EnvMySQL, err)
	}
	admin := cfg.Clone()
	if admin.Params == nil {
		admin.Params = map[string]string{}
	}
	// A test that leaks a transaction would otherwise block the DROP for a year.
	admin.Params["lock_wait_timeout"] = "10"
	conn, err := mysql.NewConnector(admin)
	if err != nil {
		tb.Fatalf("dbtest: %s: %v", EnvMySQL, err)
	}
	adminDB := sql.OpenDB(conn)
	name := uniqueName(cfg.DBName)
	quoted := "`" + strings.ReplaceAll(name, "`", "``") + "`"
	_, err = adminDB.ExecContext(tb.Context(), "CREATE DATABASE "+quoted+" CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	if err != nil {
		_ = adminDB.Close()
		tb.Fatalf("dbtest: create database on MariaDB at %s: %v", cfg.Addr, err)
	}
	tb.Cleanup(func() {
		defer func() { _ = adminDB.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		if _, err := adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoted); err != nil {
			tb.Errorf("dbtest: drop database %s (a connection or transaction left open?): %v", name, err)
		}
	})
	cfg.DBName = name
	dsn = cfg.FormatDSN()
	return open(tb, "mysql", dsn, name), dsn
}

// Postgres returns a *sql.DB (driver pgx) on a fresh PostgreSQL database of its
// own, owned by the DSN's user, and the DSN that opens it, or skips (locally) /
// fails (CI=true) the test when EnvPostgres is not set. The database is dropped
// at cleanup, after db is closed, together with any connection still open on it.
func Postgres(tb testing.TB) (db *sql.DB, dsn string) {
	tb.Helper()
	base := lookup(tb, EnvPostgres, "postgres")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("dbtest: %s must be a postgres:// URL (%v)", EnvPostgres, err)
	}
	adminDB, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatalf("dbtest: %s: %v", EnvPostgres, err)
	}
	name := uniqueName(strings.TrimPrefix(u.Path, "/"))
	quoted := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if _, err := adminDB.ExecContext(tb.Context(), "CREATE DATABASE "+quoted); err != nil {
		_ = adminDB.Close()
		tb.Fatalf("dbtest: create database on PostgreSQL at %s: %v", u.Host, err)
	}
	tb.Cleanup(func() {
		defer func() { _ = adminDB.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		// WITH (FORCE) cannot terminate an autovacuum worker, which a
		// user without pg_signal_backend is refused (SQLSTATE 42501):
		// the worker finishes (after a benchmark's 100,000 rows, in
		// seconds), so try again until dropTimeout.
		var err error
		for {
			if _, err = adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err == nil || !strings.Contains(err.Error(), "42501") {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
				continue
			}
			break
		}
		if err != nil {
			tb.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	u.RawPath = ""
	dsn = u.String()
	return open(tb, "pgx", dsn, name), dsn
}

// lookup returns the DSN in env, or skips (locally) / fails (CI=true) the test.
func lookup(tb testing.TB, env, server string) string {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: under CI=true integration tests must run against a real database (scripts/test.sh starts one)", env)
		}
		tb.Skipf("integration test: %s not set; run scripts/test.sh, or: set -a; eval \"$(scripts/db.sh start %s)\"; set +a", env, server)
	}
	return v
}

// open opens dsn, checks that it answers and closes it at cleanup (which runs
// before the DROP registered earlier).
func open(tb testing.TB, driver, dsn, name string) *sql.DB {
	tb.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatalf("dbtest: open %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if err := db.PingContext(tb.Context()); err != nil {
		tb.Fatalf("dbtest: connect to %s: %v", name, err)
	}
	return db
}

var seq atomic.Int64

// uniqueName returns a database name unique to this test run, prefixed with
// base (the DSN's database, whose prefix the test user may create on MariaDB).
func uniqueName(base string) string {
	if base == "" {
		base = "eventlogging_test"
	}
	return fmt.Sprintf("%s_%d_%d_%d", base, os.Getpid(), time.Now().Unix(), seq.Add(1))
}
