package schemarepo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/eventlogging/eventlogging/internal/registry"
	"github.com/eventlogging/eventlogging/internal/registry/compat"
)

// LoadReporting reads a schema folder as Load does and writes a warning to
// w for every file it does not load, with the reason.
func LoadReporting(dir string, w io.Writer) (map[string][]Version, error) {
	repo, skipped, err := Load(dir)
	if err != nil {
		return nil, err
	}
	for _, sk := range skipped {
		fmt.Fprintf(w, "warning: %s: not loaded: %s\n", filepath.Join(dir, filepath.FromSlash(sk.Path)), sk.Reason)
	}
	return repo, nil
}

// LintDir lints every schema file of dir and writes each problem to w; it
// returns how many problems and files there were.
func LintDir(dir string, w io.Writer) (problems, files int, err error) {
	repo, err := LoadReporting(dir, w)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range Subjects(repo) {
		for _, v := range repo[s] {
			files++
			for _, p := range Lint(v) {
				fmt.Fprintln(w, p)
				problems++
			}
		}
	}
	return problems, files, nil
}

// JSONText is a schema file's JSON text as the registry registers it
// (JSON as written, YAML converted), so pushes match imports.
func JSONText(v Version) (string, error) {
	text, err := registry.SchemaText(v.Raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", v.Path, err)
	}
	return text, nil
}

// CompatDir checks each version of dir against the previous ones of its
// subject under lvl and writes each violation to w; it returns how many
// there were.
func CompatDir(dir string, lvl compat.Level, w io.Writer) (int, error) {
	repo, err := LoadReporting(dir, w)
	if err != nil {
		return 0, err
	}
	bad := 0
	for _, s := range Subjects(repo) {
		var prev []string
		for _, v := range repo[s] {
			text, err := JSONText(v)
			if err != nil {
				return 0, err
			}
			if len(prev) > 0 {
				viol, err := compat.Check("JSON", lvl, text, prev)
				if err != nil {
					return 0, fmt.Errorf("%s: %w", v.Path, err)
				}
				for _, x := range viol {
					fmt.Fprintf(w, "%s: %s: %s\n", v.Path, x.Path, x.Message)
					bad++
				}
			}
			prev = append(prev, text)
		}
	}
	return bad, nil
}

// Push registers every version of dir in the registry of cl (legacy
// revisions keep their number as the global id), writing each one it
// registers to w; versions already there are left alone.
func Push(ctx context.Context, cl *sr.Client, dir string, w io.Writer) (registered, existing int, err error) {
	repo, err := LoadReporting(dir, w)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range Subjects(repo) {
		for i, v := range repo[s] {
			text, err := JSONText(v)
			if err != nil {
				return registered, existing, err
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
				// Forced: IMPORT is refused by default on a subject that
				// has versions, and adding a revision to a legacy schema
				// that exists is the everyday change.
				for _, r := range cl.SetMode(sr.WithParams(ctx, sr.Force), sr.ModeImport, s) {
					if r.Err != nil {
						return registered, existing, fmt.Errorf("push %s: set import mode: %w", v.Label(), r.Err)
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
				return registered, existing, fmt.Errorf("push %s (%s): %w", v.Label(), v.Path, explainIncompatible(ctx, cl, s, text, err))
			}
			registered++
			fmt.Fprintf(w, "registered %s\n", v.Label())
		}
	}
	return registered, existing, nil
}

// oldSchemaDetail is the registry's quote of the whole earlier schema in a
// 409 answer (Confluent's "{oldSchema: '…'}"), left out of what push shows.
var oldSchemaDetail = regexp.MustCompile(`(?s),? ?\{oldSchema: '.*?'\}(, )?`)

// explainIncompatible turns the registry's 409 for a version of subject
// (text, the JSON pushed) into what differs: the reasons, without the
// whole earlier schema the answer quotes, and a diff of the latest
// registered version against the pushed one. Other errors are returned as
// they are.
func explainIncompatible(ctx context.Context, cl *sr.Client, subject, text string, err error) error {
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 {
		return err
	}
	reasons := oldSchemaDetail.ReplaceAllString(re.Message, ", ")
	old, gerr := RegisteredText(ctx, cl, subject, -1)
	if gerr != nil {
		return fmt.Errorf("incompatible with the registered versions: %s", reasons)
	}
	var doc any
	pushed := text
	if json.Unmarshal([]byte(text), &doc) == nil {
		pushed = Pretty(doc)
	}
	return fmt.Errorf("incompatible with the registered versions: %s\nwhat differs from the latest registered version (- registered, + pushed):\n%s", reasons, DiffContext(old, pushed, 3))
}

// RegisteredText is version v (-1: the latest) of subject in the registry
// of cl, JSON pretty-printed (other schema types as registered).
func RegisteredText(ctx context.Context, cl *sr.Client, subject string, v int) (string, error) {
	ss, err := cl.SchemaByVersion(ctx, subject, v)
	if err != nil {
		return "", err
	}
	var doc any
	if err := json.Unmarshal([]byte(ss.Schema.Schema), &doc); err != nil {
		return ss.Schema.Schema + "\n", nil //nolint:nilerr // Avro or other text: print as registered
	}
	return Pretty(doc), nil
}
