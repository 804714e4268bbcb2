package purge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParsePolicyBad: each testdata/policy/*.bad.yaml is refused with the
// error in the .err file next to it.
func TestParsePolicyBad(t *testing.T) {
	files, err := filepath.Glob("testdata/policy/*.bad.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad policies: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(f + ".err")
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParsePolicy(src)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrPolicy) {
				t.Errorf("error %v does not wrap ErrPolicy", err)
			}
			if got := err.Error(); got != strings.TrimSuffix(string(want), "\n") {
				t.Errorf("error\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestParsePolicyGood(t *testing.T) {
	for _, tc := range []struct {
		file      string
		retention time.Duration
		rules     int
	}{
		{"full.good.yaml", 2160 * time.Hour, 2},
		{"days.good.yaml", 30 * 24 * time.Hour, 0},
		{"empty.good.yaml", 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata/policy", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParsePolicy(src)
			if err != nil {
				t.Fatal(err)
			}
			if p.Retention != tc.retention || len(p.Rules) != tc.rules {
				t.Errorf("got %+v", p)
			}
			d, err := p.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if tc.retention == 0 && d.Retention != DefaultRetention {
				t.Errorf("default retention %s", d.Retention)
			}
		})
	}
}

// TestPolicyValidatedByPurge: a Policy built in code gets the same checks.
func TestPolicyValidatedByPurge(t *testing.T) {
	p := Policy{Rules: map[string]Rule{"Edit": {Keep: []string{"clientIp"}}}}
	if _, err := PurgeFiles(t.Context(), t.TempDir(), p); !errors.Is(err, ErrPolicy) {
		t.Errorf("PurgeFiles: %v, want ErrPolicy", err)
	}
	if _, err := PurgeSQL(t.Context(), nil, "sqlite", p); !errors.Is(err, ErrPolicy) {
		t.Errorf("PurgeSQL: %v, want ErrPolicy", err)
	}
	if _, err := PurgeSQL(t.Context(), nil, "oracle", Policy{}); !errors.Is(err, ErrPolicy) {
		t.Errorf("PurgeSQL unknown dialect: %v, want ErrPolicy", err)
	}
}

// TestNeverKeptPlatformFields: an Event Platform event's IP and request
// headers, by their file path or their sqlsink column path, can never be
// kept in clear; their neighbours can.
func TestNeverKeptPlatformFields(t *testing.T) {
	for f, refused := range map[string]bool{
		"clientIp": true, "USERAGENT": true,
		"http.client_ip": true, "event.http.client_ip": true,
		"http.request_headers": true, "http.request_headers.user-agent": true,
		"event.http.request_headers": true, "Event.HTTP.Request_Headers.user-agent": true,
		"http.method": false, "http.client_ip_hint": false, "event.action": false, "meta.stream": false,
	} {
		p := Policy{Rules: map[string]Rule{"/analytics/edit_funnel/1.0.0": {Keep: []string{f}}}}
		err := p.validate()
		if refused != errors.Is(err, ErrPolicy) {
			t.Errorf("keep %q: %v, want refused %t", f, err, refused)
		}
	}
}

func TestSanitiseRecord(t *testing.T) {
	rec := map[string]any{
		"uuid": "u", "schema": "S", "clientIp": "1.2.3.4",
		"event": map[string]any{"user": map[string]any{"id": int64(7), "name": "A"}, "n": nil},
	}
	rule := Rule{Keep: []string{"event.user"}, Hash: []string{"event.user.id", "event.n", "event.missing"}}
	got := sanitiseRecord(rec, rule, func(s string) string { return "h(" + s + ")" })
	ev := got["event"].(map[string]any)
	user := ev["user"].(map[string]any)
	if user["id"] != "h(7)" || user["name"] != "A" || ev["n"] != nil || got["clientIp"] != nil || got["uuid"] != "u" {
		t.Errorf("got %v", got)
	}
	if _, ok := ev["missing"]; ok {
		t.Errorf("missing field created: %v", got)
	}
	// The source record is not modified.
	if rec["event"].(map[string]any)["user"].(map[string]any)["id"] != int64(7) {
		t.Errorf("source modified: %v", rec)
	}
}
