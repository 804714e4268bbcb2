package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGoodFiles: every testdata/*.good.yaml loads and validates.
func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) < 3 {
		t.Fatalf("found %d good files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestBadFiles: every testdata/*.bad.yaml fails with the text in its .err file.
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) < 5 {
		t.Fatalf("found %d bad files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f + ".err")
		if err != nil {
			t.Fatalf("%s has no .err file: %v", f, err)
		}
		_, err = Parse(data)
		if err == nil {
			t.Errorf("%s: no error, want %q", f, want)
			continue
		}
		if !strings.Contains(err.Error(), strings.TrimSpace(string(want))) {
			t.Errorf("%s: error %q does not contain %q", f, err, strings.TrimSpace(string(want)))
		}
	}
}

func TestFullFileValues(t *testing.T) {
	data, _ := os.ReadFile("testdata/full.good.yaml")
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Kafka.Brokers) != 3 || c.Kafka.ReplicationFactor != 3 || len(c.Process.Inputs) != 2 || c.Kafka.Linger != 5*time.Millisecond {
		t.Errorf("values not read: %+v", c)
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
