package dbtest_test

import (
	"database/sql"
	"os"
	"testing"

	"github.com/eventlogging/eventlogging/internal/dbtest"
)

func TestDatabase(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		driver  string
		open    func(testing.TB) (*sql.DB, string)
		create  string
		insert  string
		current string // query naming the connected database
		exists  string // query counting databases with the name $1 / ?
	}{
		{
			name:    "MySQL",
			env:     dbtest.EnvMySQL,
			driver:  "mysql",
			open:    dbtest.MySQL,
			create:  "CREATE TABLE events (id BIGINT AUTO_INCREMENT PRIMARY KEY, body VARCHAR(255) NOT NULL)",
			insert:  "INSERT INTO events (body) VALUES (?)",
			current: "SELECT DATABASE()",
			exists:  "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?",
		},
		{
			name:    "Postgres",
			env:     dbtest.EnvPostgres,
			driver:  "pgx",
			open:    dbtest.Postgres,
			create:  "CREATE TABLE events (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)",
			insert:  "INSERT INTO events (body) VALUES ($1)",
			current: "SELECT current_database()",
			exists:  "SELECT COUNT(*) FROM pg_database WHERE datname = $1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const body = "événement 🦊"
			var first, second string
			t.Run("fresh database", func(t *testing.T) {
				db, dsn := tt.open(t)
				if err := db.QueryRowContext(t.Context(), tt.current).Scan(&first); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(t.Context(), tt.create); err != nil {
					t.Fatal(err)
				}
				if _, err := db.ExecContext(t.Context(), tt.insert, body); err != nil {
					t.Fatal(err)
				}

				// The returned DSN opens the same database.
				other, err := sql.Open(tt.driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Close()
				var got string
				if err := other.QueryRowContext(t.Context(), "SELECT body FROM events").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != body {
					t.Errorf("read back %q, want %q", got, body)
				}

				// A second call gets another, empty database.
				db2, _ := tt.open(t)
				if err := db2.QueryRowContext(t.Context(), tt.current).Scan(&second); err != nil {
					t.Fatal(err)
				}
				if second == first {
					t.Fatalf("two calls share database %s", first)
				}
				if _, err := db2.ExecContext(t.Context(), tt.create); err != nil {
					t.Errorf("table from the first database visible in the second: %v", err)
				}
			})
			if t.Failed() || first == "" {
				return
			}

			// Both databases are gone once the subtest has finished.
			base, err := sql.Open(tt.driver, os.Getenv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			defer base.Close()
			for _, name := range []string{first, second} {
				var n int
				if err := base.QueryRowContext(t.Context(), tt.exists, name).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 0 {
					t.Errorf("database %s still exists after cleanup", name)
				}
			}
		})
	}
}
