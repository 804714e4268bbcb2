package sqlsink

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/schema"
)

// Event Platform events ("$schema" at the root) are stored by the same
// layout machinery as capsules: the schema describes the whole record,
// which is flattened as a capsule's "event" is, and the capsule columns
// are filled from meta (see doc.go).

// isPlatform reports whether id names an Event Platform schema: its Name
// is a $schema path (schema.Resolver.ResolveURI gives such ids, with
// Revision 0). Legacy schema names never contain "/".
func isPlatform(id schema.ID) bool {
	return strings.HasPrefix(id.Name, "/")
}

// platformID reads the $schema of an Event Platform event and returns the
// schema id of its canonical path. The error is a poison reason; a path
// that cannot name a table is refused here, before any lookup or SQL.
func platformID(v any) (schema.ID, error) {
	uri, ok := v.(string)
	if !ok {
		return schema.ID{}, fmt.Errorf("/$schema: got %s, want string", kind(v))
	}
	p, err := schema.Path(uri)
	if err != nil {
		return schema.ID{}, fmt.Errorf("/$schema: %w", err)
	}
	id := schema.ID{Name: p}
	if _, err := platformTable(p, false); err != nil {
		return schema.ID{}, fmt.Errorf("/$schema: %w", err)
	}
	return id, nil
}

// platformTable returns the table of the Event Platform schema at path (a
// canonical $schema path, as from schema.Path): the path's segments joined
// with "_", dots as "_" ("/analytics/button_click/1.0.0" is
// analytics_button_click_1_0_0); with perSchema, without the version
// (analytics_button_click). The name is made of ASCII letters, digits, "_"
// and "-" only, like a legacy schema name, and shortened to maxIdent as
// tableName does.
func platformTable(path string, perSchema bool) (string, error) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 2 {
		return "", fmt.Errorf("$schema %q: want a schema path and a version, like /analytics/button_click/1.0.0", path)
	}
	if _, err := parseVersion(segs[len(segs)-1]); err != nil {
		return "", fmt.Errorf("$schema %q: %w", path, err)
	}
	if perSchema {
		segs = segs[:len(segs)-1]
	}
	name := strings.ReplaceAll(strings.Join(segs, "_"), ".", "_")
	if i := strings.IndexFunc(name, func(r rune) bool { return !tableRune(r) }); i >= 0 {
		return "", fmt.Errorf("$schema %q: %q cannot be part of a table name", path, name[i])
	}
	return shorten(name), nil
}

// tableRune reports whether r may be part of an Event Platform table name:
// the runes of a legacy schema name.
func tableRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// parseVersion parses the version segment of a $schema path: dot-separated
// decimal numbers ("1.0.0"). With TablePerSchema, versions are ordered by
// it, as revisions are.
func parseVersion(s string) ([]int64, error) {
	parts := strings.Split(s, ".")
	out := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || !allDigits(p) {
			return nil, fmt.Errorf("the last segment %q is not a version like 1.0.0", s)
		}
		out[i] = n
	}
	return out, nil
}

// platformCapsule fills the capsule columns of an Event Platform event:
// uuid from meta.id, dt from meta.dt and timestamp from meta.dt too (the
// receive time, which retention purges by; the event's own "dt" is the
// client's clock and stays an event column), schema the canonical $schema
// path. The other capsule columns are NULL: their data (meta.stream,
// meta.domain, http.client_ip, the user agent) is in the event columns,
// stored as given.
func (l *layout) platformCapsule(c map[string]any, vals []any, d *dialect) error {
	meta, ok := c["meta"].(map[string]any)
	if !ok && c["meta"] != nil {
		return fmt.Errorf("/meta: got %s, want object", kind(c["meta"]))
	}
	// capsuleColumns has uuid, dt and timestamp in this order.
	var recv time.Time
	for i := range l.capsuleCols {
		col := &l.columns[i]
		switch {
		case col.typ == typeUUID:
			v, err := d.capsuleValue(col, meta["id"])
			if err != nil {
				return fmt.Errorf("/meta/id: %w", err)
			}
			vals[i] = v
		case col.typ == typeDT:
			dt, ok := meta["dt"].(string)
			if !ok {
				if meta["dt"] == nil {
					return errors.New("/meta/dt: required: the receive time fills the dt and timestamp columns")
				}
				return fmt.Errorf("/meta/dt: got %s, want string", kind(meta["dt"]))
			}
			v, err := d.capsuleValue(col, dt)
			if err != nil {
				return fmt.Errorf("/meta/dt: %w", err)
			}
			if recv, err = time.Parse(time.RFC3339Nano, dt); err != nil {
				return fmt.Errorf("/meta/dt: %q is not an RFC 3339 date-time", dt)
			}
			vals[i] = v
		case col.typ == typeMWTime:
			ts, ok := mediaWikiTimestamp(recv.Unix())
			if !ok {
				return fmt.Errorf("/meta/dt: %s is outside the years 0000-9999 of a MediaWiki timestamp", recv.Format(time.RFC3339))
			}
			vals[i] = ts
		case col.field == "schema":
			vals[i] = l.id.Name
		}
	}
	return nil
}
