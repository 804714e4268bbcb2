package cli

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/config"
)

func runCheckConfig(ctx context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	fs := newFlagSet("check-config", `Usage: eventlogging check-config --config FILE

Validates the configuration file (with EVENTLOGGING_* environment overrides
applied) and prints the effective configuration, secrets shown as ***. Exits
1 with the offending key on the first error.`, stderr)
	path := fs.String("config", "", "configuration file (YAML); required")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("%w: check-config: --config is required", errUsage)
	}
	c, err := config.Load(*path)
	if err != nil {
		return err
	}
	// Secrets (kafka.sasl_password, tokens, a DSN's password) print as ***.
	out, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	fmt.Fprintf(stdout, "# %s is valid; effective configuration:\n%s", *path, out)
	return nil
}
