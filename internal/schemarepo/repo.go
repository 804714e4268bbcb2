package schemarepo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

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
// order), in the layouts schema.ScanFolder reads. It also returns the files
// that are not loaded, with the reasons, for warnings.
func Load(dir string) (map[string][]Version, []schema.Skipped, error) {
	f, err := schema.ScanFolder(dir)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]Version{}
	for _, ff := range append(f.Legacy, f.Platform...) {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ff.Path)))
		if err != nil {
			return nil, nil, fmt.Errorf("schema repository %s: %w", dir, err)
		}
		v := Version{Subject: ff.ID.Name, Revision: ff.ID.Revision, Path: filepath.FromSlash(ff.Path), Raw: raw}
		if ff.Title != "" {
			v = Version{Subject: ff.Title, SemVer: ff.Version, Path: filepath.FromSlash(ff.Path), Raw: raw}
		}
		out[v.Subject] = append(out[v.Subject], v)
	}
	return out, f.Skipped, nil
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
func CompareVersions(a, b string) int { return schema.CompareVersions(a, b) }
