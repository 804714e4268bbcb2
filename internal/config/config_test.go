package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// testdataFile is a file of testdata and its contents.
type testdataFile struct {
	name string
	data []byte
}

// readTestdata reads the files matching testdata/<pattern>, in name
// order; it fails tb if fewer than least match.
func readTestdata(tb testing.TB, pattern string, least int) []testdataFile {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(names) < least {
		tb.Fatalf("found %d files matching testdata/%s (%v), want at least %d", len(names), pattern, err, least)
	}
	files := make([]testdataFile, len(names))
	for i, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		files[i] = testdataFile{name, data}
	}
	return files
}

// TestGoodFiles: every testdata/*.good.yaml loads and validates.
func TestGoodFiles(t *testing.T) {
	for _, f := range readTestdata(t, "*.good.yaml", 3) {
		if _, err := Parse(f.data); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
}

// TestBadFiles: every testdata/*.bad.yaml fails with the text in its .err file.
func TestBadFiles(t *testing.T) {
	for _, f := range readTestdata(t, "*.bad.yaml", 5) {
		want, err := os.ReadFile(f.name + ".err")
		if err != nil {
			t.Fatalf("%s has no .err file: %v", f.name, err)
		}
		_, err = Parse(f.data)
		if err == nil {
			t.Errorf("%s: no error, want %q", f.name, want)
			continue
		}
		if !strings.Contains(err.Error(), strings.TrimSpace(string(want))) {
			t.Errorf("%s: error %q does not contain %q", f.name, err, strings.TrimSpace(string(want)))
		}
	}
}

func TestFullFileValues(t *testing.T) {
	data, _ := os.ReadFile("testdata/full.good.yaml")
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Kafka.Brokers) != 3 || c.Kafka.ReplicationFactor != 3 || len(c.Process.Inputs) != 2 || c.Kafka.Linger != 5*time.Millisecond || c.Intake.SyncLinger != 250*time.Microsecond {
		t.Errorf("values not read: %+v", c)
	}
	if d := Default().Intake.SyncLinger; d != 100*time.Microsecond {
		t.Errorf("default intake.sync_linger %s, want 100µs", d)
	}
}

func TestEnvOverrides(t *testing.T) {
	c := Default()
	env := map[string]string{
		"EVENTLOGGING_KAFKA_BROKERS":                       "a:1, b:2",
		"EVENTLOGGING_KAFKA_SESSION_TIMEOUT":               "6s",
		"EVENTLOGGING_KAFKA_PARTITIONS":                    "3",
		"EVENTLOGGING_PROCESS_IP":                          "drop",
		"EVENTLOGGING_PROCESS_TRUST_CLIENT_CAPSULE_FIELDS": "true",
	}
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Kafka.Brokers, ",") != "a:1,b:2" || c.Kafka.SessionTimeout != 6*time.Second ||
		c.Kafka.Partitions != 3 || c.Process.IP != "drop" || !c.Process.TrustClientCapsuleFields {
		t.Errorf("env not applied: %+v", c)
	}
	bad := func(k string) (string, bool) {
		if k == "EVENTLOGGING_KAFKA_PARTITIONS" {
			return "many", true
		}
		return "", false
	}
	if err := applyEnv(&c, bad); err == nil || !strings.Contains(err.Error(), "EVENTLOGGING_KAFKA_PARTITIONS") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSecurityKeys: the TLS and SASL keys from a file and from the
// environment (the password from EVENTLOGGING_KAFKA_SASL_PASSWORD).
func TestSecurityKeys(t *testing.T) {
	data, _ := os.ReadFile("testdata/security.good.yaml")
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	k := c.Kafka
	if !k.TLS || k.TLSCAFile != "testdata/ca.pem" || k.TLSServerName != "kafka.internal" || k.SASLMechanism != "SCRAM-SHA-512" || k.SASLUsername != "eventlogging" {
		t.Errorf("security keys not read: %+v", k)
	}
	c = Default()
	env := map[string]string{
		"EVENTLOGGING_KAFKA_TLS":            "true",
		"EVENTLOGGING_KAFKA_TLS_CA_FILE":    "testdata/ca.pem",
		"EVENTLOGGING_KAFKA_SASL_MECHANISM": "scram-sha-256",
		"EVENTLOGGING_KAFKA_SASL_USERNAME":  "eventlogging",
		"EVENTLOGGING_KAFKA_SASL_PASSWORD":  "from-the-environment",
	}
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.Kafka.TLS || c.Kafka.TLSCAFile != "testdata/ca.pem" || c.Kafka.SASLPassword != "from-the-environment" {
		t.Errorf("env not applied: %+v", c.Kafka)
	}
}

// TestRedactDSN: only a DSN's password is hidden; its scheme, user, host
// and parameters print as written, also with no password.
func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgresql://eventlogging@db.example.org:5432/iceberg?sslmode=verify-full", "postgresql://eventlogging@db.example.org:5432/iceberg?sslmode=verify-full"},
		{"postgresql://eventlogging:pw@db.example.org:5432/iceberg", "postgresql://eventlogging:***@db.example.org:5432/iceberg"},
		{"postgres://el:pw:with:colons@db/events", "postgres://el:***@db/events"},
		{"https://client:secret@catalog.example.org/api/catalog", "https://client:***@catalog.example.org/api/catalog"},
		{"mysql:el:pw@tcp(db:3306)/events", "mysql:el:***@tcp(db:3306)/events"},
		{"mysql:el@tcp(db:3306)/events", "mysql:el@tcp(db:3306)/events"},
		{"el:pw@tcp(db:3306)/events", "el:***@tcp(db:3306)/events"},
		{"sqlite:///var/lib/eventlogging/iceberg.db", "sqlite:///var/lib/eventlogging/iceberg.db"},
	} {
		if got := redactDSN(tc.dsn); got != tc.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

// TestSecretsNeverPrinted: Redacted (what check-config prints) hides the
// SASL password, the tokens and a DSN's password, and leaves c alone;
// validation errors never quote the password.
func TestSecretsNeverPrinted(t *testing.T) {
	c := Default()
	c.Kafka.SASLMechanism, c.Kafka.SASLUsername, c.Kafka.SASLPassword = "PLAIN", "u", "kafka-pass-1"
	c.Registry.Token = "registry-token-2"
	c.Registry.WriteToken = "registry-token-2"
	c.Dashboard.ReplayToken = "replay-token-3"
	c.Dashboard.Token = "replay-token-3"
	c.Sink.SQL = "postgres://el:db-pass-4@db:5432/events"
	r := c.Redacted()
	out, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"kafka-pass-1", "registry-token-2", "replay-token-3", "db-pass-4"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("%s printed:\n%s", secret, out)
		}
	}
	if r.Kafka.SASLPassword != "***" || r.Registry.Token != "***" || r.Sink.SQL != "postgres://el:***@db:5432/events" || r.Kafka.SASLUsername != "u" {
		t.Errorf("redacted: %+v", r)
	}
	if c.Kafka.SASLPassword != "kafka-pass-1" || c.Registry.Token != "registry-token-2" {
		t.Error("Redacted changed the original")
	}
	if d := Default().Redacted(); d.Registry.Token != "" || d.Kafka.SASLPassword != "" {
		t.Errorf("unset secrets print as ***: %+v", d)
	}
	for _, f := range readTestdata(t, "*.bad.yaml", 0) {
		if _, err := Parse(f.data); err != nil && strings.Contains(err.Error(), "do-not-print-me") {
			t.Errorf("%s: error quotes the password: %v", f.name, err)
		}
	}
}

// TestAdminKeys: the admin networks' default (loopback), an empty list
// (tokens only) from a file and from the environment, and the tokens under
// their new and former names.
func TestAdminKeys(t *testing.T) {
	if got := strings.Join(Default().Security.AdminNetworks, ","); got != "127.0.0.0/8,::1" {
		t.Errorf("default admin networks %q, want loopback", got)
	}
	c, err := Parse([]byte("security:\n  admin_networks: []\n"))
	if err != nil || len(c.Security.AdminNetworks) != 0 {
		t.Errorf("admin_networks: [] gave %q, %v", c.Security.AdminNetworks, err)
	}
	for _, tt := range []struct {
		env                      map[string]string
		networks                 string
		registryToken, dashToken string
	}{
		{map[string]string{"EVENTLOGGING_SECURITY_ADMIN_NETWORKS": "10.0.0.0/8, 192.0.2.7"}, "10.0.0.0/8,192.0.2.7", "", ""},
		{map[string]string{"EVENTLOGGING_SECURITY_ADMIN_NETWORKS": ""}, "", "", ""},
		{map[string]string{"EVENTLOGGING_REGISTRY_TOKEN": "r1", "EVENTLOGGING_DASHBOARD_REPLAY_TOKEN": "d1"}, "127.0.0.0/8,::1", "r1", "d1"},
		{map[string]string{"EVENTLOGGING_REGISTRY_WRITE_TOKEN": "r2", "EVENTLOGGING_DASHBOARD_TOKEN": "d2"}, "127.0.0.0/8,::1", "r2", "d2"},
		{map[string]string{"EVENTLOGGING_REGISTRY_WRITE_TOKEN": "r3", "EVENTLOGGING_REGISTRY_TOKEN": "r3"}, "127.0.0.0/8,::1", "r3", ""},
	} {
		c := Default()
		if err := applyEnv(&c, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%v: %v", tt.env, err)
			continue
		}
		if got := strings.Join(c.Security.AdminNetworks, ","); got != tt.networks || c.Registry.AdminToken() != tt.registryToken || c.Dashboard.AdminToken() != tt.dashToken {
			t.Errorf("%v: networks %q, registry token %q, dashboard token %q", tt.env, got, c.Registry.AdminToken(), c.Dashboard.AdminToken())
		}
	}
}

// TestAllowedHosts: security.allowed_hosts' default (localhost), a list
// from a file and from the environment.
func TestAllowedHosts(t *testing.T) {
	if got := strings.Join(Default().Security.AllowedHosts, ","); got != "localhost" {
		t.Errorf("default allowed hosts %q, want localhost", got)
	}
	data, _ := os.ReadFile("testdata/admin.good.yaml")
	c, err := Parse(data)
	if got := strings.Join(c.Security.AllowedHosts, ","); err != nil || got != "localhost,dashboard.example.org,registry.internal:8081,[::1]" {
		t.Errorf("admin.good.yaml: allowed hosts %q, %v", got, err)
	}
	c = Default()
	env := map[string]string{"EVENTLOGGING_SECURITY_ALLOWED_HOSTS": "dash.example.org, localhost:8090"}
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Security.AllowedHosts, ","); c.Validate() != nil || got != "dash.example.org,localhost:8090" {
		t.Errorf("from the environment: %q, %v", got, c.Validate())
	}
}

// TestLogKeys: log.format and log.request_sample from the environment.
func TestLogKeys(t *testing.T) {
	c := Default()
	env := map[string]string{"EVENTLOGGING_LOG_FORMAT": "json", "EVENTLOGGING_LOG_REQUEST_SAMPLE": "0.25"}
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.Log.Format != "json" || c.Log.RequestSample != 0.25 {
		t.Errorf("log %+v, %v", c.Log, err)
	}
	env["EVENTLOGGING_LOG_REQUEST_SAMPLE"] = "a few"
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err == nil || !strings.Contains(err.Error(), "EVENTLOGGING_LOG_REQUEST_SAMPLE") {
		t.Errorf("bad sample: %v", err)
	}
}

// TestRoleMetricsListen: process.metrics_listen and sink.metrics_listen
// win over metrics.listen, which stays the fallback for both; empty means
// the role's default.
func TestRoleMetricsListen(t *testing.T) {
	for _, tt := range []struct {
		yaml          string
		process, sink string
	}{
		{"", "", ""},
		{"metrics:\n  listen: \":9200\"\n", ":9200", ":9200"},
		{"metrics:\n  listen: \"off\"\nprocess:\n  metrics_listen: \":9101\"\n", ":9101", "off"},
		{"metrics:\n  listen: \":9200\"\nsink:\n  metrics_listen: \"127.0.0.1:9102\"\n", ":9200", "127.0.0.1:9102"},
		{"process:\n  metrics_listen: \":9301\"\nsink:\n  metrics_listen: \"off\"\n", ":9301", "off"},
	} {
		c, err := Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if got := c.ProcessMetricsListen(); got != tt.process {
			t.Errorf("%q: process /metrics %q, want %q", tt.yaml, got, tt.process)
		}
		if got := c.SinkMetricsListen(); got != tt.sink {
			t.Errorf("%q: sink /metrics %q, want %q", tt.yaml, got, tt.sink)
		}
	}
	c := Default()
	env := map[string]string{"EVENTLOGGING_PROCESS_METRICS_LISTEN": ":9401", "EVENTLOGGING_SINK_METRICS_LISTEN": ":9402"}
	if err := applyEnv(&c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if c.ProcessMetricsListen() != ":9401" || c.SinkMetricsListen() != ":9402" {
		t.Errorf("env: process %q, sink %q", c.ProcessMetricsListen(), c.SinkMetricsListen())
	}
}

// TestDashboardHealth: dashboard.health from a file and from the
// environment (ROLE=URL,…); an empty variable clears it.
func TestDashboardHealth(t *testing.T) {
	data, _ := os.ReadFile("testdata/roles.good.yaml")
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dashboard.Health) != 2 || c.Dashboard.Health["intake"] != "http://intake1:8080/readyz" {
		t.Errorf("dashboard.health from the file: %v", c.Dashboard.Health)
	}
	for _, tt := range []struct {
		env  string
		want map[string]string
		err  string
	}{
		{"intake=http://a:8080/readyz, registry=http://r:8081/", map[string]string{"intake": "http://a:8080/readyz", "registry": "http://r:8081/"}, ""},
		{"", nil, ""},
		{"intake", nil, "EVENTLOGGING_DASHBOARD_HEALTH"},
	} {
		cc := c
		err := applyEnv(&cc, func(k string) (string, bool) { return tt.env, k == "EVENTLOGGING_DASHBOARD_HEALTH" })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one naming %s", tt.env, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.env, err)
		}
		if err := cc.Validate(); err != nil {
			t.Errorf("%q: %v", tt.env, err)
		}
		if !maps.Equal(cc.Dashboard.Health, tt.want) {
			t.Errorf("%q: health %v, want %v", tt.env, cc.Dashboard.Health, tt.want)
		}
	}
}

// TestProcessInputs: the processors read the server-side raw topic beside
// the client-side one while process.inputs is the default, and exactly
// process.inputs when a file sets it.
func TestProcessInputs(t *testing.T) {
	c := Default()
	in := c.ProcessInputs()
	if len(in) != 2 || in[0] != c.Process.Inputs[0] || in[1].Topic != "eventlogging-server-side" || in[1].Format != ServerSideFormat {
		t.Errorf("default inputs %+v", in)
	}
	if len(c.Process.Inputs) != 1 {
		t.Errorf("ProcessInputs changed process.inputs: %+v", c.Process.Inputs)
	}
	set, err := Parse([]byte("process:\n  inputs:\n    - topic: raw\n      format: \"%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if in := set.ProcessInputs(); len(in) != 1 || in[0].Topic != "raw" {
		t.Errorf("inputs of a file that sets them: %+v", in)
	}
}
