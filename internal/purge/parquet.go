package purge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// sanitisedParquetSuffix replaces ".parquet" in the name of a rewritten
// Parquet file (still matched by *.parquet), for the same reason as
// sanitisedSuffix.
const sanitisedParquetSuffix = ".sanitised" + parquetSuffix

// ErrParquetSanitise is returned (wrapped, with the file) for a Parquet
// file of a schema with a rule that cannot be sanitised: a column that
// must be dropped is required or repeated (filesink writes neither: every
// field it writes is optional and none repeats). The partition is left
// unmarked.
var ErrParquetSanitise = errors.New("purge: cannot sanitise this Parquet file")

// leafAction is what a sanitisation does to one leaf column.
type leafAction uint8

const (
	leafDrop leafAction = iota // set NULL
	leafKeep                   // unchanged
	leafHash                   // BYTE_ARRAY replaced by its HMAC
)

// pqColumn is one leaf column of the file being rewritten.
type pqColumn struct {
	path     []string
	byteArr  bool // physical type BYTE_ARRAY: can hold a hash
	optional bool // the leaf itself is optional: can be set NULL
	repeated bool // the leaf or a group above it repeats
	maxDef   int
}

// parquetRewrite is the state of one Parquet file's rewrite.
type parquetRewrite struct {
	cols      []pqColumn
	schemaCol int                     // index of the top-level "schema" column, or -1
	fileRule  string                  // schema name from the file name
	plans     map[string][]leafAction // by schema name
}

// plan returns the per-column actions for rule, checking that every dropped
// or hashed column can be changed.
func (pr *parquetRewrite) plan(schemaName string, rule Rule) ([]leafAction, error) {
	if a, ok := pr.plans[schemaName]; ok {
		return a, nil
	}
	split := func(fields []string) [][]string {
		out := make([][]string, len(fields))
		for i, f := range fields {
			out[i] = strings.Split(f, ".")
		}
		return out
	}
	keep, hash := split(rule.Keep), split(rule.Hash)
	acts := make([]leafAction, len(pr.cols))
	for i, c := range pr.cols {
		act := leafDrop
		if slices.Contains(bookkeeping, c.path[0]) {
			act = leafKeep
		} else {
			for _, k := range keep {
				if hasPrefix(c.path, k) {
					act = leafKeep // a kept object keeps all its leaves
				}
			}
			for _, h := range hash {
				switch {
				case slices.Equal(c.path, h) && c.byteArr:
					act = leafHash
				case hasPrefix(c.path, h):
					// A hashed number, boolean or object cannot hold the
					// hash in its column: it is dropped, as in SQL.
					act = leafDrop
				}
			}
		}
		if act != leafKeep && (c.repeated || !c.optional) {
			return nil, fmt.Errorf("%w: column %s is required or repeated", ErrParquetSanitise, strings.Join(c.path, "."))
		}
		acts[i] = act
	}
	pr.plans[schemaName] = acts
	return acts, nil
}

// hasPrefix reports whether path starts with (or is) prefix.
func hasPrefix(path, prefix []string) bool {
	return len(prefix) <= len(path) && slices.Equal(path[:len(prefix)], prefix)
}

// rewriteParquet sanitises one Parquet file, returning the rows kept and
// dropped. Each row is sanitised with the rule of its "schema" column (the
// schema in the file name when the column is missing or NULL); rows of a
// schema without a rule are dropped. The file's schema is kept as it is:
// dropped columns become NULL (a NULL leaf with its parent groups present
// as they were), hashed BYTE_ARRAY columns hold the hex HMAC of their
// bytes, and a hashed column of another type is set NULL, as PurgeSQL does
// for hashed columns that are not text. A JSON-text column (filesink's
// arrays, free objects and unions) is hashed as its stored text, which is
// the value's compact JSON.
func (fp *filePurge) rewriteParquet(dir, name string, hash func(string) string) (kept, dropped int, err error) {
	rw, done, err := startRewrite(dir, name, parquetSuffix, sanitisedParquetSuffix)
	if done || err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			rw.abort()
		}
	}()
	in, err := os.Open(rw.src)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return 0, 0, err
	}
	file, err := parquet.OpenFile(in, st.Size())
	if err != nil {
		return 0, 0, err
	}
	sch := file.Schema()
	pr := &parquetRewrite{schemaCol: -1, fileRule: parquetSchema(name), plans: map[string][]leafAction{}}
	for i, path := range sch.Columns() {
		leaf, ok := sch.Lookup(path...)
		if !ok || leaf.ColumnIndex != i {
			return 0, 0, fmt.Errorf("%w: column %s not found in its schema", ErrParquetSanitise, strings.Join(path, "."))
		}
		c := pqColumn{
			path:     path,
			byteArr:  leaf.Node.Type().Kind() == parquet.ByteArray,
			optional: leaf.Node.Optional(),
			repeated: leaf.MaxRepetitionLevel > 0,
			maxDef:   leaf.MaxDefinitionLevel,
		}
		if len(path) == 1 && path[0] == "schema" && c.byteArr && !c.repeated {
			pr.schemaCol = i
		}
		pr.cols = append(pr.cols, c)
	}

	opts := []parquet.WriterOption{sch,
		parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1),
		parquet.DataPageStatistics(true),
	}
	for _, kv := range file.Metadata().KeyValueMetadata {
		opts = append(opts, parquet.KeyValueMetadata(kv.Key, kv.Value))
	}
	w := parquet.NewGenericWriter[any](rw.bw, opts...)
	buf := make([]parquet.Row, 256)
	out := make([]parquet.Row, 0, len(buf))
	for _, rg := range file.RowGroups() {
		k, d, err := fp.sanitiseRowGroup(rg, pr, w, buf, out, hash)
		kept += k
		dropped += d
		if err != nil {
			return 0, 0, err
		}
	}
	return rw.finish(kept, dropped, w.Close)
}

// sanitiseRowGroup writes the sanitised rows of one row group to w.
func (fp *filePurge) sanitiseRowGroup(rg parquet.RowGroup, pr *parquetRewrite, w *parquet.GenericWriter[any],
	buf, out []parquet.Row, hash func(string) string) (kept, dropped int, err error) {
	rows := rg.Rows()
	defer rows.Close()
	for {
		n, rerr := rows.ReadRows(buf)
		out = out[:0]
		for _, row := range buf[:n] {
			name := pr.fileRule
			if pr.schemaCol >= 0 {
				for _, v := range row {
					if v.Column() == pr.schemaCol && !v.IsNull() {
						name = string(v.ByteArray())
					}
				}
			}
			rule, ok := fp.p.Rules[name]
			if !ok {
				dropped++
				continue
			}
			acts, err := pr.plan(name, rule)
			if err != nil {
				return kept, dropped, err
			}
			for i, v := range row {
				c := v.Column()
				switch acts[c] {
				case leafKeep:
				case leafHash:
					if !v.IsNull() {
						row[i] = parquet.ByteArrayValue([]byte(hash(string(v.ByteArray())))).
							Level(v.RepetitionLevel(), v.DefinitionLevel(), c)
					}
				case leafDrop:
					if !v.IsNull() {
						// The leaf is optional and not repeated: one
						// level below its maximum is "parent present,
						// leaf NULL".
						row[i] = parquet.NullValue().Level(0, pr.cols[c].maxDef-1, c)
					}
				}
			}
			out = append(out, row)
			kept++
		}
		if len(out) > 0 {
			if _, err := w.WriteRows(out); err != nil {
				return kept, dropped, err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return kept, dropped, nil
		}
		if rerr != nil {
			return kept, dropped, rerr
		}
	}
}
