package schema

import (
	"encoding/json"
	"slices"
	"strings"
)

// EventMatches reports whether a JSON value is an event of schema name:
// its top-level "schema" is name (EventLogging capsules and EventErrors),
// or its "$schema" path (/title/.../version) has name as one of its
// elements or as its title.
func EventMatches(value []byte, name string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(value, &top) != nil {
		return false
	}
	var s string
	if raw, ok := top["schema"]; ok && json.Unmarshal(raw, &s) == nil && s == name {
		return true
	}
	raw, ok := top["$schema"]
	if !ok || json.Unmarshal(raw, &s) != nil {
		return false
	}
	p, err := Path(s)
	if err != nil {
		return false
	}
	elems := strings.Split(p[1:], "/")
	if slices.Contains(elems, name) {
		return true
	}
	title := strings.Join(elems[:len(elems)-1], "/")
	return title != "" && strings.Trim(name, "/") == title
}
