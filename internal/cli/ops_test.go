package cli

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/eventlogging/eventlogging/internal/config"
)

// deploymentFile is the example deployment (TestDeployment runs it).
const deploymentFile = "../../deploy/examples/deployment.yaml"

// TestDeploymentExpectations: what status and the dashboard expect of
// deploy/examples/deployment.yaml — the processors' group, both sinks'
// groups, the intake and the registry of dashboard.health — and how
// --health and a local standalone change it.
func TestDeploymentExpectations(t *testing.T) {
	data, err := os.ReadFile(deploymentFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var f opsFlags
	groups := f.expectedGroups(c)
	want := []string{"processor=eventlogging-processor", "sink-sql=eventlogging-sink-sql", "sink-files=eventlogging-sink-files"}
	var got []string
	for _, g := range groups {
		got = append(got, g.Role+"="+g.Group)
	}
	if !slices.Equal(got, want) {
		t.Errorf("expected groups %v, want %v", got, want)
	}
	health, err := f.healthTargets(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(health) != 2 || health["intake"] != "http://intake1:8080/readyz" || health["registry"] != "http://registry1:8081/" {
		t.Errorf("health targets %v, want dashboard.health's intake and registry", health)
	}
	// --health replaces dashboard.health; registry.url stays checked.
	health, err = f.healthTargets(c, "intake-2=http://intake2:8080/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if len(health) != 2 || health["intake-2"] != "http://intake2:8080/readyz" || health["registry"] != "http://registry1:8081/" {
		t.Errorf("--health: targets %v, want intake-2 and registry.url", health)
	}
	if _, err := f.healthTargets(c, "intake"); !errors.Is(err, errUsage) {
		t.Errorf("--health intake: %v, want a usage error", err)
	}
	// Without sinks in the file, none is expected; a local standalone
	// runs both.
	c.Sink.SQL, c.Sink.Files = "", ""
	if g := f.expectedGroups(c); len(g) != 1 || g[0].Role != "processor" {
		t.Errorf("no sink configured: expected %v, want the processors only", g)
	}
	f.standalone = true
	if g := f.expectedGroups(c); len(g) != 3 {
		t.Errorf("a local standalone: expected %v, want the processors and both sinks", g)
	}
}
