package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
)

// ErrInvalidID is wrapped by the errors of [ID.Validate] and [IDFromJSON]:
// the (name, revision) pair cannot name any schema.
var ErrInvalidID = errors.New("invalid schema id")

// maxNameLen is the longest schema name accepted, as in the original
// EventLogging (^[a-zA-Z0-9_-]{1,63}$).
const maxNameLen = 63

// ID names one schema version: the schema name and its revision (the
// registry's global id).
type ID struct {
	Name     string
	Revision int64
}

// String formats the id as "Name/Revision", the layout of a schema folder.
func (id ID) String() string {
	return id.Name + "/" + strconv.FormatInt(id.Revision, 10)
}

// Validate reports whether id can name a schema: the name matches
// ^[a-zA-Z0-9_-]{1,63}$ and the revision is at least 1. The error wraps
// [ErrInvalidID].
func (id ID) Validate() error {
	if !validName(id.Name) {
		return fmt.Errorf("%w: name %q must match ^[a-zA-Z0-9_-]{1,63}$", ErrInvalidID, id.Name)
	}
	if id.Revision < 1 {
		return fmt.Errorf("%w: revision %d must be at least 1", ErrInvalidID, id.Revision)
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// IDFromJSON builds an ID from the "schema" and "revision" values of a
// decoded event (encoding/json, with or without UseNumber) and validates it.
// The name must be a string; the revision must be an integer: a json.Number
// without fraction or exponent, an integral float64, or a Go integer.
// Errors wrap [ErrInvalidID].
func IDFromJSON(name, revision any) (ID, error) {
	n, ok := name.(string)
	if !ok {
		return ID{}, fmt.Errorf("%w: schema name is %s, want string", ErrInvalidID, JSONKind(name))
	}
	var rev int64
	switch r := revision.(type) {
	case json.Number:
		v, err := strconv.ParseInt(string(r), 10, 64)
		if err != nil {
			return ID{}, fmt.Errorf("%w: revision %s is not an integer", ErrInvalidID, r)
		}
		rev = v
	case float64:
		if r != math.Trunc(r) || r < math.MinInt64 || r >= math.MaxInt64 {
			return ID{}, fmt.Errorf("%w: revision %v is not an integer", ErrInvalidID, r)
		}
		rev = int64(r)
	case int:
		rev = int64(r)
	case int64:
		rev = r
	default:
		return ID{}, fmt.Errorf("%w: revision is %s, want integer", ErrInvalidID, JSONKind(revision))
	}
	id := ID{Name: n, Revision: rev}
	if err := id.Validate(); err != nil {
		return ID{}, err
	}
	return id, nil
}

// JSONKind names the JSON Schema type of a decoded value: null, boolean,
// string, integer (a whole number), number, array or object; for a value
// JSON does not decode to, its Go type. Error messages name values by it.
func JSONKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case float32:
		if float64(x) == math.Trunc(float64(x)) {
			return "integer"
		}
		return "number"
	case int, int64, int32:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// ParseIDFromPath extracts an ID from a schema file path or URI laid out as
// ".../<Name>/<revision>[.json|.yaml|.yml]": the name is the parent folder,
// the revision the file's base name. Any scheme or leading folders are
// ignored ("file:///x/Edit/12.yaml", "Edit/12"). It reports false when the
// path has no such shape or the id does not pass [ID.Validate].
func ParseIDFromPath(p string) (ID, bool) {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	base := path.Base(p)
	dir := path.Dir(p)
	if dir == "." || dir == "/" || base == "" {
		return ID{}, false
	}
	name := path.Base(dir)
	for _, ext := range []string{".json", ".yaml", ".yml"} {
		if strings.HasSuffix(base, ext) {
			base = strings.TrimSuffix(base, ext)
			break
		}
	}
	if base == "" || strings.TrimLeft(base, "0123456789") != "" {
		return ID{}, false
	}
	rev, err := strconv.ParseInt(base, 10, 64)
	if err != nil {
		return ID{}, false
	}
	id := ID{Name: name, Revision: rev}
	if id.Validate() != nil {
		return ID{}, false
	}
	return id, true
}
