package deploy_test

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/purge"
)

const (
	clusterExample = "examples/cluster.yaml"
	secretsExample = "examples/secrets.env"
	policyExample  = "examples/purge-policy.yaml"
)

// TestClusterExample loads the cluster example with the configuration
// loader, as every role does. config.Validate checks that the Kafka TLS
// files exist, so a temporary file stands in for the CA through its
// environment override; the SASL password comes from the environment as in
// production, and the file must not load without it.
func TestClusterExample(t *testing.T) {
	unsetEnv(t)
	data, err := os.ReadFile(clusterExample)
	if err != nil {
		t.Fatal(err)
	}
	var raw config.Config
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	// No secret in the file.
	if raw.Kafka.SASLPassword != "" || raw.Registry.WriteToken != "" || raw.Registry.Token != "" ||
		raw.Dashboard.Token != "" || raw.Dashboard.ReplayToken != "" || strings.Contains(raw.Sink.SQL, "@") {
		t.Error("the example holds a secret: set it in secrets.env instead")
	}

	ca := filepath.Join(t.TempDir(), "kafka-ca.pem")
	if err := os.WriteFile(ca, []byte("stand-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVENTLOGGING_KAFKA_TLS_CA_FILE", ca)
	if _, err := config.Load(clusterExample); err == nil || !strings.Contains(err.Error(), "EVENTLOGGING_KAFKA_SASL_PASSWORD") {
		t.Errorf("without the password: %v, want the error naming EVENTLOGGING_KAFKA_SASL_PASSWORD", err)
	}
	t.Setenv("EVENTLOGGING_KAFKA_SASL_PASSWORD", "from-secrets-env")
	cfg, err := config.Load(clusterExample)
	if err != nil {
		t.Fatalf("%s: %v", clusterExample, err)
	}

	k := cfg.Kafka
	if len(k.Brokers) != 3 || !k.TLS || raw.Kafka.TLSCAFile == "" || !strings.HasPrefix(k.SASLMechanism, "SCRAM-") || k.SASLUsername == "" {
		t.Errorf("kafka: want 3 brokers, TLS with a CA file and SASL/SCRAM; got %+v", cfg.Redacted().Kafka)
	}
	if k.ReplicationFactor != 3 {
		t.Errorf("kafka.replication_factor %d, want 3 on 3 brokers", k.ReplicationFactor)
	}
	if cfg.Registry.URL == "" {
		t.Error("registry.url is not set: processors and intakes would need the schema folder")
	}
	for _, n := range cfg.Security.AdminNetworks {
		if strings.HasPrefix(n, "127.") || n == "::1" {
			t.Errorf("security.admin_networks holds loopback %s: a proxy on the same host would make every client an admin", n)
		}
	}
	if len(cfg.Security.AdminNetworks) == 0 {
		t.Error("security.admin_networks is empty")
	}
	if len(cfg.Intake.TrustedProxies) == 0 {
		t.Error("intake.trusted_proxies is empty: behind a load balancer every client would have its address")
	}
	if cfg.Process.IP == "keep" {
		t.Error("process.ip: keep stores client IPs everywhere")
	}

	// The paths the roles write are where the systemd units let them.
	intake := readUnit(t, filepath.Join(unitDir, "eventlogging-intake.service"))
	if got := flagValue(execArgs(intake), "spool-dir"); got != cfg.Intake.SpoolDir {
		t.Errorf("intake.spool_dir %q differs from the intake unit's --spool-dir %q", cfg.Intake.SpoolDir, got)
	}
	sink := readUnit(t, filepath.Join(unitDir, "eventlogging-sink.service"))
	if state := path.Join("/var/lib", sink.one("Service", "StateDirectory")); !strings.HasPrefix(cfg.Sink.Files, state+"/") {
		t.Errorf("sink.files %q is not in the sink unit's state directory %s", cfg.Sink.Files, state)
	}
	if cfg.Metrics.Listen != "" {
		t.Errorf("metrics.listen %q: process and sink on one host would share it; the units pass --metrics-listen", cfg.Metrics.Listen)
	}
}

// secretNames are the configuration's secrets, by environment variable.
var secretNames = []string{
	"EVENTLOGGING_KAFKA_SASL_PASSWORD",
	"EVENTLOGGING_REGISTRY_WRITE_TOKEN",
	"EVENTLOGGING_DASHBOARD_TOKEN",
	"EVENTLOGGING_SINK_SQL",
}

// envNames are the EVENTLOGGING_<SECTION>_<KEY> variables the
// configuration loader reads: one per key of the file.
func envNames() []string {
	var out []string
	root := reflect.TypeFor[config.Config]()
	for i := range root.NumField() {
		section := root.Field(i)
		for j := range section.Type.NumField() {
			key := section.Type.Field(j).Tag.Get("yaml")
			out = append(out, "EVENTLOGGING_"+strings.ToUpper(section.Tag.Get("yaml")+"_"+key))
		}
	}
	return out
}

// TestSecretsExample: every variable the secrets file names, set or in a
// comment, is one the configuration reads; every secret of the
// configuration is there; and no value is filled in.
func TestSecretsExample(t *testing.T) {
	known := envNames()
	for _, s := range secretNames {
		if !slices.Contains(known, s) {
			t.Fatalf("%s is not a configuration variable: update secretNames", s)
		}
	}
	f, err := os.Open(secretsExample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := regexp.MustCompile(`\b(EVENTLOGGING_[A-Z0-9_]+)=`)
	var named []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		for _, m := range name.FindAllStringSubmatch(line, -1) {
			if !slices.Contains(known, m[1]) {
				t.Errorf("%s:%d: %s is not a variable the configuration reads", secretsExample, n, m[1])
			}
			named = append(named, m[1])
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(k, " \t") {
			t.Errorf("%s:%d: want KEY=value", secretsExample, n)
		}
		if v != "" {
			t.Errorf("%s:%d: %s has a value: the example holds no secret", secretsExample, n, k)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range secretNames {
		if !slices.Contains(named, s) {
			t.Errorf("%s does not name %s", secretsExample, s)
		}
	}
}

// TestPurgePolicyExample parses the policy example as `eventlogging purge`
// does.
func TestPurgePolicyExample(t *testing.T) {
	data, err := os.ReadFile(policyExample)
	if err != nil {
		t.Fatal(err)
	}
	p, err := purge.ParsePolicy(data)
	if err != nil {
		t.Fatalf("%s: %v", policyExample, err)
	}
	if p.Retention <= 0 || len(p.Rules) == 0 {
		t.Errorf("%s: want a retention and at least one schema rule, got %+v", policyExample, p)
	}
}
