package sqlsink

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/eventlogging/eventlogging/internal/dbtest"
)

func TestConformanceSQLite(t *testing.T) {
	runConformance(t, openSQLite(t), SQLite)
}

func TestConformanceMySQL(t *testing.T) {
	_, dsn := dbtest.MySQL(t)
	runConformance(t, openDSN(t, MySQL, dsn), MySQL)
}

func TestConformancePostgres(t *testing.T) {
	_, dsn := dbtest.Postgres(t)
	runConformance(t, openDSN(t, Postgres, dsn), Postgres)
}

// openSQLite opens a fresh SQLite database file in a temporary folder.
func openSQLite(t testing.TB) *sql.DB {
	t.Helper()
	return openDSN(t, SQLite, filepath.Join(t.TempDir(), "events.db"))
}

// openDSN opens dsn with Open and closes it at cleanup (before dbtest drops
// the database).
func openDSN(t testing.TB, d Dialect, dsn string) *sql.DB {
	t.Helper()
	db, err := Open(d, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
