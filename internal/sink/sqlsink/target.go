package sqlsink

import "strings"

// ParseTarget splits a sink.sql value (sqlite:PATH, mysql:DSN or a
// postgres:// URL) into its dialect and the driver's DSN.
func ParseTarget(dsn string) (Dialect, string) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return SQLite, strings.TrimPrefix(dsn, "sqlite:")
	case strings.HasPrefix(dsn, "mysql:"):
		return MySQL, strings.TrimPrefix(dsn, "mysql:")
	default:
		return Postgres, dsn
	}
}
