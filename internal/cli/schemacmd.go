package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/registry/compat"
	"github.com/eventlogging/eventlogging/internal/schemarepo"
)

var schemaHelp = helpText("schema")

func runSchema(ctx context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		fmt.Fprintln(stdout, schemaHelp)
		if len(args) == 0 {
			return fmt.Errorf("%w: schema: no command", errUsage)
		}
		return nil
	}
	cmd := args[0]
	fs := newFlagSet("schema "+cmd, schemaHelp, stderr)
	registry := fs.String("registry", os.Getenv("EVENTLOGGING_REGISTRY_URL"), "registry base URL")
	defaultToken := os.Getenv("EVENTLOGGING_REGISTRY_WRITE_TOKEN")
	if defaultToken == "" {
		defaultToken = os.Getenv("EVENTLOGGING_REGISTRY_TOKEN") // the former name
	}
	token := fs.String("token", defaultToken, "bearer token for registry writes")
	level := fs.String("level", "BACKWARD", "compatibility level for compat")
	flagArgs, pos := splitArgs(fs, args[1:])
	if err := parseFlags(fs, flagArgs); err != nil {
		return err
	}
	// Each command's arguments, and whether it talks to the registry.
	want, ok := map[string]struct {
		n        int
		what     string
		registry bool
	}{
		"lint": {1, "DIR", false}, "compat": {1, "DIR", false}, "push": {1, "DIR", true},
		"get": {1, "NAME [VERSION]", true}, "diff": {3, "NAME V1 V2", true},
	}[cmd]
	switch {
	case !ok:
		return fmt.Errorf("%w: schema: unknown command %q (lint, compat, push, get, diff)", errUsage, cmd)
	case len(pos) < want.n:
		return fmt.Errorf("%w: schema %s: want %s", errUsage, cmd, want.what)
	case want.registry && *registry == "":
		return fmt.Errorf("%w: schema %s: --registry URL is required", errUsage, cmd)
	}
	var cl *sr.Client
	if want.registry {
		opts := []sr.ClientOpt{sr.URLs(*registry)}
		if *token != "" {
			opts = append(opts, sr.BearerToken(*token))
		}
		var err error
		if cl, err = sr.NewClient(opts...); err != nil {
			return err
		}
	}
	switch cmd {
	case "lint":
		return schemaLint(pos[0], stdout)
	case "compat":
		lvl, err := compat.ParseLevel(*level)
		if err != nil {
			return fmt.Errorf("%w: schema compat: %w", errUsage, err)
		}
		return schemaCompat(pos[0], lvl, stdout)
	case "push":
		return schemaPush(ctx, cl, pos[0], stdout)
	case "get":
		v := "latest"
		if len(pos) > 1 {
			v = pos[1]
		}
		text, err := schemaText(ctx, cl, pos[0], v)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, text)
		return nil
	}
	a, err := schemaText(ctx, cl, pos[0], pos[1]) // diff
	if err != nil {
		return err
	}
	b, err := schemaText(ctx, cl, pos[0], pos[2])
	if err != nil {
		return err
	}
	if d := schemarepo.Diff(a, b); d != "" {
		fmt.Fprintf(stdout, "--- %s version %s\n+++ %s version %s\n%s", pos[0], pos[1], pos[0], pos[2], d)
	}
	return nil
}

// errFindings makes lint and compat exit 1 after printing their findings
// (given with exitAs, so that it is not part of the message).
var errFindings = errors.New("findings")

// count writes n and the noun, in the plural unless n is 1: "1 problem",
// "2 problems".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func schemaLint(dir string, stdout io.Writer) error {
	n, files, err := schemarepo.LintDir(dir, stdout)
	if err != nil {
		return err
	}
	if n > 0 {
		return exitAs{fmt.Errorf("schema lint: %s in %s", count(n, "problem"), dir), errFindings}
	}
	fmt.Fprintf(stdout, "%d schema files in %s: no problems\n", files, dir)
	return nil
}

func schemaCompat(dir string, lvl compat.Level, stdout io.Writer) error {
	bad, err := schemarepo.CompatDir(dir, lvl, stdout)
	if err != nil {
		return err
	}
	if bad > 0 {
		return exitAs{fmt.Errorf("schema compat: %s of %s compatibility", count(bad, "violation"), lvl), errFindings}
	}
	fmt.Fprintf(stdout, "every version in %s is %s compatible with its predecessors\n", dir, lvl)
	return nil
}

func schemaPush(ctx context.Context, cl *sr.Client, dir string, stdout io.Writer) error {
	registered, existing, err := schemarepo.Push(ctx, cl, dir, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d registered, %d already there\n", registered, existing)
	return nil
}

func schemaText(ctx context.Context, cl *sr.Client, subject, version string) (string, error) {
	v := -1
	if version != "latest" {
		n, err := strconv.Atoi(version)
		if err != nil || n < 1 {
			return "", fmt.Errorf("%w: version %q: want a number from 1 or latest", errUsage, version)
		}
		v = n
	}
	text, err := schemarepo.RegisteredText(ctx, cl, subject, v)
	if err != nil {
		return "", fmt.Errorf("schema %s version %s: %w", subject, version, err)
	}
	return text, nil
}
