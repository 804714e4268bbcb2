package schema

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FolderFile is one schema version found in a schema folder.
type FolderFile struct {
	// Path is the file, relative to the folder, with forward slashes.
	Path string
	// ID of a legacy schema (<Name>/<revision>.json); zero for Event
	// Platform schemas.
	ID ID
	// Title and Version of an Event Platform schema
	// ([jsonschema/]<title>/<version>); empty for legacy schemas. The
	// schema's $schema path is "/" + Title + "/" + Version.
	Title, Version string
}

// Skipped is a file of a schema folder that is not loaded, and why.
type Skipped struct {
	Path   string // relative to the folder, forward slashes
	Reason string
}

// Folder is what a schema folder holds: legacy schemas by (name,
// revision), sorted; Event Platform schemas by title, then version order;
// and every other file with the reason it is not loaded.
type Folder struct {
	Legacy   []FolderFile
	Platform []FolderFile
	Skipped  []Skipped
}

// semver is an Event Platform schema version: 1.0.0, 2.1.13.
var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// ScanFolder reads a schema folder in any of the layouts schema
// repositories use:
//
//   - legacy EventLogging: <Name>/<revision>.json|yaml|yml;
//   - Event Platform (Wikimedia's schema repositories):
//     jsonschema/<title>/<version>, where <version> is x.y.z, as an
//     extensionless JSON file and/or <version>.json|yaml|yml beside
//     current.yaml (the unreleased working copy) and latest (an alias);
//     the same layout without the jsonschema/ level is read too.
//
// One file is loaded per version, in the order extensionless, .json,
// .yaml, .yml (the repositories materialise the same document in each);
// the others, current.yaml, latest*, and every file that fits no layout
// are listed in Skipped with the reason. Folders whose name starts with
// "." (.git) are not read. A folder that does not exist is an error.
func ScanFolder(dir string) (Folder, error) {
	var f Folder
	if st, err := os.Stat(dir); err != nil {
		return f, fmt.Errorf("schema folder: %w", err)
	} else if !st.IsDir() {
		return f, fmt.Errorf("schema folder %s: not a directory", dir)
	}
	seen := map[string]string{} // version key -> path loaded
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil // editor and VCS files (.gitignore, .swp)
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			f.Skipped = append(f.Skipped, Skipped{rel, "not a regular file"})
			return nil
		}
		ff, reason := classify(rel)
		if reason != "" {
			f.Skipped = append(f.Skipped, Skipped{rel, reason})
			return nil
		}
		key := ff.ID.String()
		if ff.Title != "" {
			key = "/" + ff.Title + "/" + ff.Version
		}
		if prev, dup := seen[key]; dup {
			// Keep the preferred form; report the other.
			if formRank(rel) < formRank(prev) {
				f.Skipped = append(f.Skipped, Skipped{prev, "the same version as " + rel + ", which is loaded instead"})
				seen[key] = rel
				f.replace(prev, ff)
				return nil
			}
			f.Skipped = append(f.Skipped, Skipped{rel, "the same version as " + prev + ", which is loaded instead"})
			return nil
		}
		seen[key] = rel
		if ff.Title != "" {
			f.Platform = append(f.Platform, ff)
		} else {
			f.Legacy = append(f.Legacy, ff)
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("schema folder %s: %w", dir, err)
	}
	slices.SortFunc(f.Legacy, func(a, b FolderFile) int { return compareIDs(a.ID, b.ID) })
	slices.SortFunc(f.Platform, func(a, b FolderFile) int {
		return cmp.Or(strings.Compare(a.Title, b.Title), CompareVersions(a.Version, b.Version))
	})
	slices.SortFunc(f.Skipped, func(a, b Skipped) int { return strings.Compare(a.Path, b.Path) })
	return f, nil
}

// replace puts ff in place of the entry loaded from path prev.
func (f *Folder) replace(prev string, ff FolderFile) {
	for _, list := range []*[]FolderFile{&f.Legacy, &f.Platform} {
		for i := range *list {
			if (*list)[i].Path == prev {
				(*list)[i] = ff
				return
			}
		}
	}
}

// formRank orders the forms of one version: extensionless, .json, .yaml,
// .yml.
func formRank(p string) int {
	switch filepath.Ext(p) {
	case ".json":
		return 1
	case ".yaml":
		return 2
	case ".yml":
		return 3
	}
	return 0
}

// notSchema is the reason given for files that fit no layout.
const notSchema = "not a schema file: want <Name>/<revision>.json|yaml|yml (legacy, the revision an integer without leading zeros), or [jsonschema/]<title>/<version> with version x.y.z, extensionless or .json|.yaml|.yml (Event Platform)"

// classify decides what a file of the folder is, or why it is skipped.
func classify(rel string) (FolderFile, string) {
	file := path.Base(rel)
	base := rel
	ext := path.Ext(rel)
	switch {
	case slices.Contains(extensions, ext):
		base = strings.TrimSuffix(rel, ext)
	case semver.MatchString(file), file == "latest":
		ext = "" // extensionless: "1.0.0" has Ext ".0"
	default:
		return FolderFile{}, notSchema
	}
	name := path.Base(base)
	dirPart := path.Dir(base)
	switch {
	case name == "current":
		return FolderFile{}, "current.yaml is the working copy of the next version, not a released version"
	case name == "latest":
		return FolderFile{}, "an alias of the latest version, which is loaded under its own version"
	case dirPart == ".":
		return FolderFile{}, "not in a schema's folder: " + notSchema
	}
	if semver.MatchString(name) {
		if dirPart == URIDir {
			return FolderFile{}, "a version directly under jsonschema/: want jsonschema/<title>/<version>"
		}
		title := strings.TrimPrefix(dirPart, URIDir+"/")
		if _, err := Path("/" + title + "/" + name); err != nil {
			return FolderFile{}, "title " + title + " cannot be part of a $schema path (letters, digits, '_', '-', '.' and '/')"
		}
		return FolderFile{Path: rel, Title: title, Version: name}, ""
	}
	id, ok := ParseIDFromPath(rel)
	if !ok || ext == "" || strings.Contains(dirPart, "/") || strconv.FormatInt(id.Revision, 10) != name || id.Validate() != nil {
		return FolderFile{}, notSchema
	}
	return FolderFile{Path: rel, ID: id}, ""
}

// CompareVersions orders dotted versions numerically, segment by segment
// (1.10.0 after 1.9.0); non-numeric segments compare as text.
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

// errNoFile is returned by readFirst when none of the candidates exists.
var errNoFile = errors.New("no such file")

// readFirst reads the first of paths that exists.
func readFirst(paths ...string) ([]byte, error) {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err // *fs.PathError names the file
		}
	}
	return nil, errNoFile
}
