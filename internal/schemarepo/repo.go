package schemarepo

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Version is one schema file of the repository.
type Version struct {
	// Subject is the legacy schema name or the Event Platform title
	// ("analytics/edit_funnel").
	Subject string
	// Revision is the legacy revision (the registry's global id); 0 for
	// Event Platform schemas.
	Revision int64
	// SemVer is the Event Platform version ("1.0.0"); "" for legacy schemas.
	SemVer string
	// Path is the file, relative to the repository root.
	Path string
	// Raw is the file's content.
	Raw []byte
}

// Label names the version for humans: "Generic/13" or
// "analytics/edit_funnel/1.0.0".
func (v Version) Label() string {
	if v.SemVer != "" {
		return v.Subject + "/" + v.SemVer
	}
	return v.Subject + "/" + strconv.FormatInt(v.Revision, 10)
}

// Load reads every schema version of the repository at dir, grouped by
// subject, each subject's versions oldest first (revision order, or semver
// order).
func Load(dir string) (map[string][]Version, error) {
	out := map[string][]Version{}
	ids, err := schema.NewDirSource(dir).List()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		var raw []byte
		var path string
		for _, ext := range []string{".json", ".yaml", ".yml"} {
			p := filepath.Join(id.Name, strconv.FormatInt(id.Revision, 10)+ext)
			if b, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
				raw, path = b, p
				break
			}
		}
		out[id.Name] = append(out[id.Name], Version{Subject: id.Name, Revision: id.Revision, Path: path, Raw: raw})
	}
	root := filepath.Join(dir, schema.URIDir)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			return err
		}
		ext := filepath.Ext(p)
		if d.IsDir() || (ext != ".json" && ext != ".yaml" && ext != ".yml") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(strings.TrimSuffix(rel, ext))
		i := strings.LastIndexByte(rel, '/')
		if i <= 0 {
			return fmt.Errorf("%s: Event Platform schemas live at jsonschema/<title>/<version>.yaml", p)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		relPath, _ := filepath.Rel(dir, p)
		v := Version{Subject: rel[:i], SemVer: rel[i+1:], Path: relPath, Raw: raw}
		out[v.Subject] = append(out[v.Subject], v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("schema repository %s: %w", dir, err)
	}
	for s := range out {
		slices.SortFunc(out[s], func(a, b Version) int {
			return cmp.Or(cmp.Compare(a.Revision, b.Revision), CompareVersions(a.SemVer, b.SemVer))
		})
	}
	return out, nil
}

// Subjects returns the subject names of a loaded repository, sorted.
func Subjects(repo map[string][]Version) []string {
	names := make([]string, 0, len(repo))
	for s := range repo {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}

// CompareVersions orders dotted versions numerically where both parts are
// numbers ("1.2.10" after "1.2.9"), textually otherwise.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}
