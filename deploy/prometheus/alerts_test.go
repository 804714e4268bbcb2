package prometheus_test

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile   = "alerts.yml"
	testsFile   = "alerts_test.yml"
	runbookFile = "../../docs/operations.md"
	metricsFile = "../../docs/metrics.md"
)

// TestPromtool checks the rules and runs their unit tests with promtool.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		const msg = "promtool missing: scripts/test.sh installs Debian's prometheus package"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", testsFile},
	} {
		cmd := exec.CommandContext(t.Context(), promtool, args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

type rulesDoc struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type testsDoc struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func alerts(t *testing.T) []rule {
	t.Helper()
	var doc rulesDoc
	readYAML(t, rulesFile, &doc)
	var out []rule
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no alert", rulesFile)
	}
	return out
}

// TestEveryAlertHasRunbookAndTests fails when an alert is added without its
// labels and annotations, its runbook section in docs/operations.md, or a
// firing and a non-firing case in alerts_test.yml.
func TestEveryAlertHasRunbookAndTests(t *testing.T) {
	anchors := markdownAnchors(t, runbookFile)

	var tests testsDoc
	readYAML(t, testsFile, &tests)
	if !slices.Contains(tests.RuleFiles, rulesFile) {
		t.Errorf("%s: rule_files does not list %s", testsFile, rulesFile)
	}
	firing := map[string]int{}
	quiet := map[string]int{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname]++
			} else {
				quiet[a.Alertname]++
			}
		}
	}

	seen := map[string]bool{}
	for _, r := range alerts(t) {
		name := r.Alert
		if seen[name] {
			t.Errorf("alert %s: defined twice", name)
		}
		seen[name] = true
		switch r.Labels["severity"] {
		case "warning", "critical":
		default:
			t.Errorf("alert %s: severity label %q, want warning or critical", name, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s: no %s annotation", name, a)
			}
		}
		anchor := strings.ToLower(name)
		if want := "docs/operations.md#" + anchor; !strings.HasSuffix(r.Annotations["runbook_url"], want) {
			t.Errorf("alert %s: runbook_url %q does not end with %q", name, r.Annotations["runbook_url"], want)
		}
		if !anchors[anchor] {
			t.Errorf("alert %s: docs/operations.md has no section \"## %s\"", name, name)
		}
		if firing[name] == 0 {
			t.Errorf("alert %s: %s has no case where it fires", name, testsFile)
		}
		if quiet[name] == 0 {
			t.Errorf("alert %s: %s has no case where it must not fire (exp_alerts: [])", name, testsFile)
		}
	}
	for name := range firing {
		if !seen[name] {
			t.Errorf("%s tests alert %s, which %s does not define", testsFile, name, rulesFile)
		}
	}
	for name := range quiet {
		if !seen[name] {
			t.Errorf("%s tests alert %s, which %s does not define", testsFile, name, rulesFile)
		}
	}
}

// TestRulesUseDocumentedMetrics catches a misspelt metric name, which
// promtool cannot: the unit tests would feed the same misspelt series.
func TestRulesUseDocumentedMetrics(t *testing.T) {
	data, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(eventlogging_[a-z0-9_]+)`").FindAllStringSubmatch(string(data), -1) {
		documented[m[1]] = true
	}
	var doc rulesDoc
	readYAML(t, rulesFile, &doc)
	// A metric name not preceded by ':' (recorded names are
	// level:metric:operation and are checked against the records).
	metric := regexp.MustCompile(`(^|[^:a-zA-Z0-9_])(eventlogging_[a-z0-9_]+)`)
	recordedName := regexp.MustCompile(`[a-z_]+:[a-z0-9_]+:[a-z0-9_]+`)
	recorded := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			for _, m := range metric.FindAllStringSubmatch(r.Expr, -1) {
				if !documented[m[2]] {
					t.Errorf("rule %s%s: metric %s is not in docs/metrics.md", r.Alert, r.Record, m[2])
				}
			}
			// Recorded series read by the expression or by a query in an
			// annotation.
			texts := []string{r.Expr}
			for _, a := range r.Annotations {
				texts = append(texts, a)
			}
			for _, text := range texts {
				for _, m := range recordedName.FindAllString(text, -1) {
					if !recorded[m] {
						t.Errorf("rule %s%s: %s is not recorded by any rule", r.Alert, r.Record, m)
					}
				}
			}
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: missing: every alert needs a runbook section there", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	fence := false
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(heading, " ") {
			continue
		}
		anchors[slug(strings.TrimSpace(heading))] = true
	}
	return anchors
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
