package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--config", "a.yaml"}, "a.yaml"},
		{[]string{"-config", "a.yaml"}, "a.yaml"},
		{[]string{"--config=a.yaml", "--listen", ":1"}, "a.yaml"},
		{[]string{"--listen", ":1", "-config=a.yaml"}, "a.yaml"},
		{[]string{"--configs", "a.yaml"}, ""},
		{[]string{"--grep", "config", "t"}, ""},
		{[]string{"--config"}, ""},
		{[]string{"--", "--config", "a.yaml"}, ""},
	} {
		if got := configFlag(tt.args); got != tt.want {
			t.Errorf("configFlag(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestLogConfig: the log section comes from the file under the
// environment, or from the environment alone when the file does not load.
func TestLogConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("log:\n  format: json\n  level: warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("log:\n  format: json\nnot a key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVENTLOGGING_LOG_LEVEL", "")
	os.Unsetenv("EVENTLOGGING_LOG_LEVEL")
	t.Setenv("EVENTLOGGING_LOG_FORMAT", "")
	os.Unsetenv("EVENTLOGGING_LOG_FORMAT")
	if lc := logConfig([]string{"--config", good}); lc.Format != "json" || lc.Level != "warn" {
		t.Errorf("from the file: %+v", lc)
	}
	t.Setenv("EVENTLOGGING_LOG_LEVEL", "debug")
	if lc := logConfig([]string{"--config", good}); lc.Format != "json" || lc.Level != "debug" {
		t.Errorf("the environment over the file: %+v", lc)
	}
	t.Setenv("EVENTLOGGING_LOG_FORMAT", "text")
	if lc := logConfig([]string{"--config", bad}); lc.Format != "text" || lc.Level != "debug" {
		t.Errorf("a broken file: %+v, want the environment's", lc)
	}
}
