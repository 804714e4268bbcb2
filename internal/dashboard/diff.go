package dashboard

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/eventlogging/eventlogging/internal/schemarepo"
)

// diffCell is one side of a side-by-side diff row.
type diffCell struct {
	Line int    // 1-based line number in its version; 0 for an empty cell
	Text string // the line, without its newline
	Op   string // "same", "removed" (left only), "added" (right only) or "empty"
}

// diffRow is one row of the side-by-side diff: the old version's line on
// the left, the new one's on the right.
type diffRow struct {
	Left, Right diffCell
}

// sideBySide aligns the line diff of a and b (schemarepo.Diff, an LCS
// diff) in two columns: kept lines face each other, and a run of removed
// lines faces the run of added lines that replaced it. It also counts the
// added and removed lines.
func sideBySide(a, b string) (rows []diffRow, added, removed int) {
	d := schemarepo.Diff(a, b)
	if d == "" { // equal
		for i, l := range splitLines(a) {
			c := diffCell{Line: i + 1, Text: l, Op: "same"}
			rows = append(rows, diffRow{Left: c, Right: c})
		}
		return rows, 0, 0
	}
	var dels, adds []diffCell
	la, lb := 0, 0
	flush := func() {
		for i := range max(len(dels), len(adds)) {
			row := diffRow{Left: diffCell{Op: "empty"}, Right: diffCell{Op: "empty"}}
			if i < len(dels) {
				row.Left = dels[i]
			}
			if i < len(adds) {
				row.Right = adds[i]
			}
			rows = append(rows, row)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, l := range splitLines(d) {
		if l == "" {
			continue // every diff line starts with its operation
		}
		op, text := l[0], l[1:]
		switch op {
		case '-':
			la++
			removed++
			dels = append(dels, diffCell{Line: la, Text: text, Op: "removed"})
		case '+':
			lb++
			added++
			adds = append(adds, diffCell{Line: lb, Text: text, Op: "added"})
		default:
			flush()
			la++
			lb++
			rows = append(rows, diffRow{
				Left:  diffCell{Line: la, Text: text, Op: "same"},
				Right: diffCell{Line: lb, Text: text, Op: "same"},
			})
		}
	}
	flush()
	return rows, added, removed
}

// splitLines splits s into lines without their newlines, dropping the
// empty tail; empty lines in the middle are kept.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// prettySchema renders a schema document for diffing: indented, keys
// sorted (schemarepo.Pretty), so that two versions line up whatever their
// source formatting. A schema given as a JSON string holding JSON (as
// the registry API carries Avro and JSON schemas) is unwrapped first;
// text that is not JSON is shown as it is.
func prettySchema(raw json.RawMessage) string {
	doc, err := decodeUseNumber(raw)
	if err != nil {
		return string(raw) + "\n"
	}
	if s, ok := doc.(string); ok {
		if inner, err := decodeUseNumber([]byte(s)); err == nil {
			doc = inner
		}
	}
	if p := schemarepo.Pretty(doc); p != "" {
		return p
	}
	return string(raw) + "\n"
}

// prettyJSON indents a JSON document keeping its key order, or returns it
// unchanged when it is not JSON.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// decodeUseNumber decodes one JSON value, numbers kept as written.
func decodeUseNumber(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailingData
	}
	return v, nil
}
