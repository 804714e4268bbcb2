package sqlsink

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/schema"
)

// Limits on capsule fields that have short, indexed columns.
const (
	maxUUIDLen = 64 // characters
	maxDTLen   = 64 // characters
)

// errNotInteger and errIntRange are returned by parseInt.
var (
	errNotInteger = errors.New("not an integer")
	errIntRange   = errors.New("out of BIGINT range")
)

// capsuleID reads the schema id of a capsule, or of an Event Platform event
// (one with "$schema": the id's Name is its canonical $schema path). The
// error is a poison reason.
func capsuleID(c map[string]any) (schema.ID, error) {
	if v, ok := c["$schema"]; ok {
		return platformID(v)
	}
	name, ok := c["schema"].(string)
	if !ok {
		return schema.ID{}, fmt.Errorf("/schema: got %s, want string", kind(c["schema"]))
	}
	rev, err := intValue(c["revision"])
	if err != nil {
		return schema.ID{}, fmt.Errorf("/revision: %w", err)
	}
	id := schema.ID{Name: name, Revision: rev}
	if err := id.Validate(); err != nil {
		return schema.ID{}, err
	}
	return id, nil
}

// row converts a capsule (or Event Platform event) into the parameters of
// an INSERT, one per column of l (nil is NULL). The error is a poison
// reason: the record cannot be stored in this layout.
func (l *layout) row(c map[string]any, d *dialect) ([]any, error) {
	vals := make([]any, len(l.columns))
	if err := l.rowInto(vals, c, d); err != nil {
		return nil, err
	}
	return vals, nil
}

// rowInto is row, filling vals (len(l.columns) values, overwritten).
func (l *layout) rowInto(vals []any, c map[string]any, d *dialect) error {
	clear(vals)
	if l.platform {
		if err := l.platformCapsule(c, vals, d); err != nil {
			return err
		}
		// The schema describes the whole record.
		return l.walk(c, l.root, vals, d)
	}
	for i := range l.capsuleCols {
		col := &l.columns[i]
		v, err := d.capsuleValue(col, c[col.field])
		if err != nil {
			return fmt.Errorf("%s: %w", col.pointer(l.eventPointer()), err)
		}
		vals[i] = v
	}
	ev, ok := c["event"].(map[string]any)
	if !ok {
		return fmt.Errorf("/event: got %s, want object", kind(c["event"]))
	}
	return l.walk(ev, l.root, vals, d)
}

// walk fills the columns of the event object obj described by n.
func (l *layout) walk(obj map[string]any, n *objNode, vals []any, d *dialect) error {
	var extra map[string]any
	for k, v := range obj {
		f, ok := n.fields[k]
		if !ok {
			if n.overflow >= 0 {
				if extra == nil {
					extra = map[string]any{}
				}
				extra[k] = v
			}
			// A closed object has no undeclared members once validated;
			// should one arrive anyway there is no column for it.
			continue
		}
		if f.obj != nil {
			switch sub := v.(type) {
			case map[string]any:
				if err := l.walk(sub, f.obj, vals, d); err != nil {
					return err
				}
			case nil:
			default:
				return fmt.Errorf("%s: got %s, want object", jsonPointer(l.eventPointer(), append(n.path[:len(n.path):len(n.path)], k)), kind(v))
			}
			continue
		}
		col := &l.columns[f.col]
		val, err := d.eventValue(col.typ, v)
		if err != nil {
			return fmt.Errorf("%s: %w", col.pointer(l.eventPointer()), err)
		}
		vals[f.col] = val
	}
	if extra != nil {
		val, err := d.eventValue(typeJSON, extra)
		if err != nil {
			return fmt.Errorf("%s: %w", l.columns[n.overflow].pointer(l.eventPointer()), err)
		}
		vals[n.overflow] = val
	}
	return nil
}

// capsuleValue converts a capsule field. A missing field is NULL, except
// the uuid, without which a row cannot be deduplicated.
func (d *dialect) capsuleValue(col *column, v any) (any, error) {
	if v == nil {
		if col.typ == typeUUID {
			return nil, errors.New("required: rows are deduplicated on the uuid")
		}
		return nil, nil
	}
	switch col.typ {
	case typeUUID, typeDT:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("got %s, want string", kind(v))
		}
		limit := maxDTLen
		if col.typ == typeUUID {
			limit = maxUUIDLen
			if s == "" {
				return nil, errors.New("required: rows are deduplicated on the uuid")
			}
		}
		if n := utf8.RuneCountInString(s); n > limit {
			return nil, fmt.Errorf("%d characters, the column holds %d", n, limit)
		}
		// v, not s: the string is already boxed, and boxing it again
		// would allocate.
		return v, d.checkText(s)
	case typeMWTime:
		sec, err := intValue(v)
		if err != nil {
			return nil, err
		}
		ts, ok := mediaWikiTimestamp(sec)
		if !ok {
			return nil, fmt.Errorf("%d seconds is outside the years 0000-9999 of a MediaWiki timestamp", sec)
		}
		return ts, nil
	case typeCapsuleInt:
		return intValue(v)
	default: // typeCapsuleStr
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("got %s, want string", kind(v))
		}
		return v, d.checkText(s)
	}
}

// eventValue converts an event value for a column of type typ. JSON null
// is NULL. A value of another type than the column's is an error: the
// event did not come from a validated capsule of this schema.
func (d *dialect) eventValue(typ colType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case typeInt:
		return intValue(v)
	case typeNumber:
		return floatValue(v)
	case typeBool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("got %s, want boolean", kind(v))
		}
		if d.name == SQLite {
			if b {
				return int64(1), nil
			}
			return int64(0), nil
		}
		return v, nil
	case typeString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("got %s, want string", kind(v))
		}
		return v, d.checkText(s)
	default: // typeJSON
		s := string(capsule.AppendValue(nil, v))
		return s, d.checkText(s)
	}
}

// checkText checks that the dialect's text column can hold s.
func (d *dialect) checkText(s string) error {
	if d.maxText > 0 && len(s) > d.maxText {
		return fmt.Errorf("%d bytes, the column holds %d", len(s), d.maxText)
	}
	if d.name == Postgres && strings.IndexByte(s, 0) >= 0 {
		return errors.New("PostgreSQL text cannot hold the NUL character U+0000")
	}
	return nil
}

// intValue converts a JSON integer exactly to int64.
func intValue(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		n, err := parseInt(string(x))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", x, err)
		}
		return n, nil
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%v: %w", x, errNotInteger)
		}
		if x < -(1<<63) || x >= 1<<63 {
			return 0, fmt.Errorf("%v: %w", x, errIntRange)
		}
		return int64(x), nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	}
	return 0, fmt.Errorf("got %s, want integer", kind(v))
}

// parseInt parses a JSON number that is an integer, in any notation JSON
// Schema accepts as one ("12", "1.0", "1e3", "1.5e1"), exactly.
func parseInt(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	} else if errors.Is(err, strconv.ErrRange) && allDigits(strings.TrimPrefix(s, "-")) {
		// (ParseInt reports a range error before looking at a fraction
		// or exponent.)
		return 0, errIntRange
	}
	// Mantissa digits and decimal exponent, without big arithmetic (an
	// exponent like 1e1000000000 must not cost anything).
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, errNotInteger
	}
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expPart, "+"))
		if err != nil {
			if len(strings.TrimLeft(expPart, "+-0123456789")) != 0 || expPart == "" {
				return 0, errNotInteger
			}
			// Too many exponent digits for an int.
			if strings.HasPrefix(expPart, "-") {
				return 0, zeroOrFraction(intPart + frac)
			}
			if strings.Trim(intPart+frac, "0") == "" {
				return 0, nil
			}
			return 0, errIntRange
		}
		exp = e
	}
	digits := intPart + frac
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = strings.TrimLeft(trimmed, "0")
	if digits == "" {
		return 0, nil
	}
	if exp < 0 {
		return 0, errNotInteger
	}
	if len(digits)+exp > 19 {
		return 0, errIntRange
	}
	str := digits + strings.Repeat("0", exp)
	if neg {
		str = "-" + str
	}
	n, err := strconv.ParseInt(str, 10, 64)
	if err != nil {
		return 0, errIntRange
	}
	return n, nil
}

func zeroOrFraction(digits string) error {
	if strings.Trim(digits, "0") == "" {
		return nil
	}
	return errNotInteger
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// floatValue converts a JSON number to float64 (the nearest double).
func floatValue(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			if math.IsInf(f, 0) {
				return 0, fmt.Errorf("%s: out of DOUBLE range", x)
			}
			return 0, fmt.Errorf("%s: not a number", x)
		}
		return f, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("%v: not a JSON number", x)
		}
		return x, nil
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	}
	return 0, fmt.Errorf("got %s, want number", kind(v))
}

// mediaWikiTimestamp formats epoch seconds as the 14-character UTC
// YYYYMMDDHHMMSS of MediaWiki (and of the original's timestamp column):
// TimestampLayout, without time.Format's cost.
func mediaWikiTimestamp(sec int64) (string, bool) {
	// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
	const lo, hi = -62167219200, 253402300799
	if sec < lo || sec > hi {
		return "", false
	}
	t := time.Unix(sec, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	var b [14]byte
	put := func(i, v, n int) {
		for j := i + n - 1; j >= i; j-- {
			b[j] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, y, 4)
	put(4, int(mo), 2)
	put(6, d, 2)
	put(8, h, 2)
	put(10, mi, 2)
	put(12, s, 2)
	return string(b[:]), true
}

// kind names the JSON type of a decoded value, for poison reasons.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number, float64, int64, int:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
