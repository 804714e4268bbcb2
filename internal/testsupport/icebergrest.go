package testsupport

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// The environment variables scripts/iceberg-rest.sh prints and
// scripts/test.sh exports.
const (
	// EnvIcebergRESTURL is the base URL of the test Iceberg REST catalog
	// (Apache Iceberg's REST catalog test fixture), e.g. http://127.0.0.1:38181.
	EnvIcebergRESTURL = "EVENTLOGGING_ICEBERG_REST_URL"
	// EnvIcebergRESTWarehouse is its warehouse, a file:// URL of a local
	// directory: the server puts every table there, whatever warehouse a
	// client asks for.
	EnvIcebergRESTWarehouse = "EVENTLOGGING_ICEBERG_REST_WAREHOUSE"
)

// IcebergRESTServer is the real Iceberg REST catalog started by
// scripts/test.sh or scripts/iceberg-rest.sh.
type IcebergRESTServer struct {
	URL       string // http://127.0.0.1:PORT, no credentials needed
	Warehouse string // file:///…, on this machine
}

// IcebergREST returns the test Iceberg REST catalog, or skips (locally) /
// fails (CI=true) the test when EnvIcebergRESTURL is not set. The catalog
// is shared by every test of the run: give each test a namespace of its own
// (Namespace).
func IcebergREST(tb testing.TB) IcebergRESTServer {
	tb.Helper()
	srv := IcebergRESTServer{
		URL:       strings.TrimSuffix(integrationEnv(tb, EnvIcebergRESTURL, "Iceberg REST catalog", `set -a; eval "$(scripts/iceberg-rest.sh start)"; set +a`), "/"),
		Warehouse: os.Getenv(EnvIcebergRESTWarehouse),
	}
	if srv.Warehouse == "" {
		tb.Fatalf("testsupport: %s is set but %s is not (eval the output of scripts/iceberg-rest.sh start)",
			EnvIcebergRESTURL, EnvIcebergRESTWarehouse)
	}
	return srv
}

// Namespace returns a namespace name no other test uses, prefix_ and
// random hex.
func (IcebergRESTServer) Namespace(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
