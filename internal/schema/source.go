package schema

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNotFound is wrapped by errors for schema versions that do not exist.
var ErrNotFound = errors.New("schema not found")

// Source fetches the raw document (JSON or YAML) of a schema version.
//
// Fetch returns an error wrapping [ErrNotFound] when the version does not
// exist; any other error is taken as transient. ctx bounds the fetch.
// Implementations must be safe for concurrent use.
type Source interface {
	Fetch(ctx context.Context, id ID) ([]byte, error)
}

// extensions are the file name extensions of schema files, in lookup order.
var extensions = []string{".json", ".yaml", ".yml"}

// DirSource is a [Source] reading a schema repository folder laid out as
// <dir>/<Name>/<revision>.json (or .yaml, .yml). It is safe for concurrent
// use and reads the disk on every Fetch; put a [Resolver] in front of it.
type DirSource struct {
	dir string
}

// NewDirSource returns a DirSource reading dir. The folder is not checked
// until the first Fetch or List.
func NewDirSource(dir string) *DirSource {
	return &DirSource{dir: dir}
}

// Fetch reads the file of schema version id, trying the extensions .json,
// .yaml and .yml in this order. Ids that fail [ID.Validate] and absent
// files give an error wrapping [ErrNotFound].
func (d *DirSource) Fetch(ctx context.Context, id ID) ([]byte, error) {
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	base := filepath.Join(d.dir, id.Name, strconv.FormatInt(id.Revision, 10))
	for _, ext := range extensions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(base + ext)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err // *fs.PathError names the file
		}
	}
	return nil, fmt.Errorf("%w: no file %s.{json,yaml,yml}", ErrNotFound, base)
}

// List returns every legacy schema version in the folder, sorted by name
// then revision: those [ScanFolder] finds, so every listed id can be
// fetched.
func (d *DirSource) List() ([]ID, error) {
	f, err := ScanFolder(d.dir)
	if err != nil {
		return nil, fmt.Errorf("schema: list %s: %w", d.dir, err)
	}
	ids := make([]ID, len(f.Legacy))
	for i, ff := range f.Legacy {
		ids[i] = ff.ID
	}
	return ids, nil
}

func compareIDs(a, b ID) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Revision, b.Revision))
}
