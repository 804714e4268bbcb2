package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/config"
	"github.com/eventlogging/eventlogging/internal/process"
)

// checkFiles checks that the files and folders the configuration names
// (relative paths are relative to the configuration file's folder) exist,
// naming the key of one that does not, and reads the stream configuration.
// Keys left at their defaults are not checked: not every role needs them.
func checkFiles(c config.Config) error {
	def := config.Default()
	defs := def.FileKeys()
	for i, f := range c.FileKeys() {
		if *f.Path == "" || *f.Path == *defs[i].Path {
			continue
		}
		st, err := os.Stat(*f.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("check-config: %s: %s does not exist (a relative path is relative to the configuration file's folder)", f.Key, *f.Path)
		case err != nil:
			return fmt.Errorf("check-config: %s: %w", f.Key, err)
		case f.Dir && !st.IsDir():
			return fmt.Errorf("check-config: %s: %s is a file, want a folder", f.Key, *f.Path)
		case !f.Dir && st.IsDir():
			return fmt.Errorf("check-config: %s: %s is a folder, want a file", f.Key, *f.Path)
		}
	}
	if c.Process.StreamsFile != "" {
		if _, err := process.LoadStreamsFile(c.Process.StreamsFile); err != nil {
			return err
		}
	}
	return nil
}

func runCheckConfig(ctx context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	flags := newFlagSet("check-config", `Usage: eventlogging check-config --config FILE

Validates the configuration file (with EVENTLOGGING_* environment overrides
applied) and prints the effective configuration, secrets shown as ***. Exits
1 with the offending key on the first error.`, stderr)
	path := flags.String("config", "", "configuration file (YAML); required")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("%w: check-config: --config is required", errUsage)
	}
	c, err := config.Load(*path)
	if err != nil {
		return err
	}
	if err := checkFiles(c); err != nil {
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
