package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/registry/compat"
	"github.com/eventlogging/eventlogging/internal/schemarepo"
)

const schemaHelp = `Usage: eventlogging schema <command> [flags] ARGS

Works on a schema repository on disk (legacy schemas as <Name>/<revision>.json
or .yaml, Event Platform schemas as jsonschema/<title>/<version>.yaml) and on
a schema registry.

Commands:
  lint DIR                     every schema parses and compiles; property names
                               are snake_case or camelCase consistently; no union
                               types; arrays have typed items; examples validate
  compat DIR [--level L]       each version against the previous ones of its
                               subject, under the compatibility level (default
                               BACKWARD), listing every violation with its path
  push DIR --registry URL      register every version (legacy revisions keep
                               their number as the global id); idempotent
  get NAME [VERSION] --registry URL
                               print a registered schema (VERSION default latest)
  diff NAME V1 V2 --registry URL
                               line diff of two registered versions

Flags:
  --registry URL   registry base URL, e.g. http://localhost:8080/registry
                   (env EVENTLOGGING_REGISTRY_URL)
  --token TOKEN    bearer token for registry writes from outside the admin networks
                   (env EVENTLOGGING_REGISTRY_WRITE_TOKEN, or EVENTLOGGING_REGISTRY_TOKEN)
  --level LEVEL    NONE, BACKWARD, FORWARD, FULL, or their _TRANSITIVE forms`

func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	need := func(n int, what string) error {
		if len(pos) < n {
			return fmt.Errorf("%w: schema %s: want %s", errUsage, cmd, what)
		}
		return nil
	}
	client := func() (*sr.Client, error) {
		if *registry == "" {
			return nil, fmt.Errorf("%w: schema %s: --registry URL is required", errUsage, cmd)
		}
		opts := []sr.ClientOpt{sr.URLs(*registry)}
		if *token != "" {
			opts = append(opts, sr.BearerToken(*token))
		}
		return sr.NewClient(opts...)
	}
	switch cmd {
	case "lint":
		if err := need(1, "DIR"); err != nil {
			return err
		}
		return schemaLint(pos[0], stdout)
	case "compat":
		if err := need(1, "DIR"); err != nil {
			return err
		}
		lvl, err := compat.ParseLevel(*level)
		if err != nil {
			return fmt.Errorf("%w: schema compat: %w", errUsage, err)
		}
		return schemaCompat(pos[0], lvl, stdout)
	case "push":
		if err := need(1, "DIR"); err != nil {
			return err
		}
		cl, err := client()
		if err != nil {
			return err
		}
		return schemaPush(ctx, cl, pos[0], stdout)
	case "get":
		if err := need(1, "NAME [VERSION]"); err != nil {
			return err
		}
		cl, err := client()
		if err != nil {
			return err
		}
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
	case "diff":
		if err := need(3, "NAME V1 V2"); err != nil {
			return err
		}
		cl, err := client()
		if err != nil {
			return err
		}
		a, err := schemaText(ctx, cl, pos[0], pos[1])
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
	return fmt.Errorf("%w: schema: unknown command %q (lint, compat, push, get, diff)", errUsage, cmd)
}

// errFindings makes lint and compat exit 1 after printing their findings.
var errFindings = errors.New("findings")

// loadRepo reads a schema folder and warns about every file it does not
// load, with the reason.
func loadRepo(dir string, w io.Writer) (map[string][]schemarepo.Version, error) {
	repo, skipped, err := schemarepo.Load(dir)
	if err != nil {
		return nil, err
	}
	for _, sk := range skipped {
		fmt.Fprintf(w, "warning: %s: not loaded: %s\n", filepath.Join(dir, filepath.FromSlash(sk.Path)), sk.Reason)
	}
	return repo, nil
}

func schemaLint(dir string, stdout io.Writer) error {
	repo, err := loadRepo(dir, stdout)
	if err != nil {
		return err
	}
	n, files := 0, 0
	for _, s := range schemarepo.Subjects(repo) {
		for _, v := range repo[s] {
			files++
			for _, p := range schemarepo.Lint(v) {
				fmt.Fprintln(stdout, p)
				n++
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("schema lint: %d problems in %s: %w", n, dir, errFindings)
	}
	fmt.Fprintf(stdout, "%d schema files in %s: no problems\n", files, dir)
	return nil
}

// jsonText is a schema file's JSON text as the registry registers it (JSON
// as written, YAML converted), so pushes match imports.
func jsonText(v schemarepo.Version) (string, error) {
	text, err := registry.SchemaText(v.Raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", v.Path, err)
	}
	return text, nil
}

func schemaCompat(dir string, lvl compat.Level, stdout io.Writer) error {
	repo, err := loadRepo(dir, stdout)
	if err != nil {
		return err
	}
	bad := 0
	for _, s := range schemarepo.Subjects(repo) {
		var prev []string
		for _, v := range repo[s] {
			text, err := jsonText(v)
			if err != nil {
				return err
			}
			if len(prev) > 0 {
				viol, err := compat.Check("JSON", lvl, text, prev)
				if err != nil {
					return fmt.Errorf("%s: %w", v.Path, err)
				}
				for _, x := range viol {
					fmt.Fprintf(stdout, "%s: %s: %s\n", v.Path, x.Path, x.Message)
					bad++
				}
			}
			prev = append(prev, text)
		}
	}
	if bad > 0 {
		return fmt.Errorf("schema compat: %d violations under %s: %w", bad, lvl, errFindings)
	}
	fmt.Fprintf(stdout, "every version in %s is %s compatible with its predecessors\n", dir, lvl)
	return nil
}

func schemaPush(ctx context.Context, cl *sr.Client, dir string, stdout io.Writer) error {
	repo, err := loadRepo(dir, stdout)
	if err != nil {
		return err
	}
	registered, existing := 0, 0
	for _, s := range schemarepo.Subjects(repo) {
		for i, v := range repo[s] {
			text, err := jsonText(v)
			if err != nil {
				return err
			}
			sch := sr.Schema{Schema: text, Type: sr.TypeJSON}
			if v.SemVer != "" {
				sch.SchemaMetadata = &sr.SchemaMetadata{Properties: map[string]string{"version": v.SemVer}}
			}
			if got, err := cl.LookupSchema(ctx, s, sch); err == nil && (v.Revision == 0 || int64(got.ID) == v.Revision) {
				existing++
				continue
			}
			if v.Revision > 0 {
				// Legacy: the revision is the global id (import mode).
				for _, r := range cl.SetMode(ctx, sr.ModeImport, s) {
					if r.Err != nil {
						return fmt.Errorf("push %s: set import mode: %w", v.Label(), r.Err)
					}
				}
				_, err = cl.CreateSchemaWithIDAndVersion(ctx, s, sch, int(v.Revision), i+1)
				for _, r := range cl.SetMode(ctx, sr.ModeReadWrite, s) {
					if r.Err != nil && err == nil {
						err = fmt.Errorf("set read-write mode: %w", r.Err)
					}
				}
			} else {
				_, err = cl.CreateSchema(ctx, s, sch)
			}
			if err != nil {
				return fmt.Errorf("push %s (%s): %w", v.Label(), v.Path, err)
			}
			registered++
			fmt.Fprintf(stdout, "registered %s\n", v.Label())
		}
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
	ss, err := cl.SchemaByVersion(ctx, subject, v)
	if err != nil {
		return "", fmt.Errorf("schema %s version %s: %w", subject, version, err)
	}
	var doc any
	if err := json.Unmarshal([]byte(ss.Schema.Schema), &doc); err != nil {
		return ss.Schema.Schema + "\n", nil //nolint:nilerr // Avro or other text: print as registered
	}
	return schemarepo.Pretty(doc), nil
}
