package icebergsink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ColumnSanitised is the boolean column PurgeOld adds to a table it
// sanitises: true in the rows it rewrote, null in every other row. Like
// the SQL purge's "sanitised" column it makes a rerun skip what is done
// (hashing is not idempotent) and shows readers which rows are sanitised.
const ColumnSanitised = "eventlogging_sanitised"

// TableInfo describes a table of the sink's to a retention policy.
type TableInfo struct {
	// Name is the table's name in the namespace ("NavigationTiming",
	// "mediawiki_page_create").
	Name string
	// Schema is the legacy EventLogging schema name a capsule table holds
	// ("NavigationTiming"); "" for an Event Platform stream's table.
	Schema string
	// Stream is the Event Platform stream a table holds
	// ("mediawiki.page-create"); "" for a capsule table.
	Stream string
}

// Sanitiser returns what an old row may keep: given the row as a capsule
// (top-level columns — "event" an object — with values string, int64,
// float64, bool, time.Time for dt, or map[string]any; null columns
// absent), it returns the row with only the allowed fields, hashed ones
// replaced by their hash, as purge sanitises a file's records. It may
// change the map it is given. Members no column holds are not stored; a
// value that does not fit its column (a hash in a long column) is stored
// as null, as the file and SQL purges do. dt (the partition) is always
// kept.
type Sanitiser func(row map[string]any) map[string]any

// RetentionRules returns the Sanitiser of a table, or nil when its schema
// has no allow-list rule: then its old hours are deleted. For
// `eventlogging purge`: look up the rule of TableInfo.Schema.
type RetentionRules func(TableInfo) Sanitiser

// PurgeReport says what PurgeOld did.
type PurgeReport struct {
	// Deleted lists the tables ("eventlogging.Name") whose old hours were
	// deleted by this run.
	Deleted []string
	// Sanitised lists the tables whose old hours were sanitised by this
	// run (tables whose old rows all were sanitised already are not
	// listed: nothing changed).
	Sanitised []string
	// FilesRewritten counts the data files replaced by sanitised ones;
	// RowsSanitised the rows sanitised by this run.
	FilesRewritten, RowsSanitised int
}

// PurgeOld applies the retention policy to every table of the namespace:
// the rows received before before, truncated to the hour (whole hour
// partitions), are deleted in tables rules gives no Sanitiser (rules nil:
// in every table), and sanitised in the others.
//
// Each table changes in one Iceberg snapshot — a delete, or an overwrite
// that replaces the old hours' data files by sanitised copies — so readers
// see the table before or after the purge, never half of it; the snapshot
// keeps the offsets of the one it follows. Sanitised rows get
// ColumnSanitised = true (the column is added first, by a schema update);
// a rerun rewrites only files holding rows not sanitised yet (late rows,
// or a run that failed), so running it twice changes nothing the second
// time. The replaced files stay until their snapshots expire
// (ExpireSnapshots): until then, time travel still reads the originals.
//
// A table's unsanitised old rows are held in memory while its files are
// rewritten. Safe to call concurrently with the Sink's commits and from
// another process (conflicts are retried). Errors of one table do not stop
// the others; they are joined.
func (s *Sink) PurgeOld(ctx context.Context, before time.Time, rules RetentionRules) (PurgeReport, error) {
	var rep PurgeReport
	cut := before.UTC().Truncate(time.Hour)
	idents, err := s.tableIdents(ctx)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, ident := range idents {
		name := strings.Join(ident, ".")
		var san Sanitiser
		if rules != nil {
			tbl, err := s.cat.LoadTable(ctx, ident)
			if err != nil {
				errs = append(errs, fmt.Errorf("icebergsink: table %s: %w", name, err))
				continue
			}
			san = rules(tableInfo(ident[len(ident)-1], tbl.Properties()[propSource]))
		}
		if san == nil {
			did, err := s.deleteOld(ctx, ident, cut)
			if err != nil {
				errs = append(errs, fmt.Errorf("icebergsink: table %s: purge: %w", name, err))
			} else if did {
				rep.Deleted = append(rep.Deleted, name)
			}
			continue
		}
		files, rows, err := s.sanitiseOld(ctx, ident, cut, san)
		if err != nil {
			errs = append(errs, fmt.Errorf("icebergsink: table %s: sanitise: %w", name, err))
			continue
		}
		if files > 0 {
			rep.Sanitised = append(rep.Sanitised, name)
			rep.FilesRewritten += files
			rep.RowsSanitised += rows
			s.log.Info("iceberg table sanitised", "table", name, "before", cut, "files", files, "rows", rows)
		}
	}
	return rep, errors.Join(errs...)
}

// tableInfo describes a table from its name and eventlogging.source.
func tableInfo(name, source string) TableInfo {
	info := TableInfo{Name: name}
	switch kind, n, _ := strings.Cut(source, ":"); kind {
	case "schema":
		info.Schema = n
	case "stream":
		info.Stream = n
	}
	return info
}

// offsetProps are the snapshot properties a maintenance snapshot carries:
// the offsets of the snapshot it follows, so that the newest snapshot
// always has them (older ones may expire).
func offsetProps(tbl *table.Table) (iceberg.Properties, error) {
	props := iceberg.Properties{}
	offs, err := snapshotOffsets(tbl.Metadata())
	if err != nil {
		return nil, err
	}
	if len(offs.written) > 0 || len(offs.complete) > 0 {
		props[PropOffsets], props[PropComplete] = encodeOffsets(offs.written), encodeOffsets(offs.complete)
	}
	return props, nil
}

// deleteOld deletes a table's rows before cut (an hour boundary) in one
// delete snapshot; it reports whether there was anything to delete.
func (s *Sink) deleteOld(ctx context.Context, ident table.Identifier, cut time.Time) (bool, error) {
	filter := iceberg.LessThan(iceberg.Reference("dt"), iceberg.Timestamp(cut.UnixMicro()))
	var did bool
	err := s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
		if tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		tasks, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
		if err != nil || len(tasks) == 0 {
			return nil, err // nothing old: no snapshot
		}
		props, err := offsetProps(tbl)
		if err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		if err := txn.Delete(ctx, filter, props); err != nil {
			return nil, err
		}
		did = true
		return txn, nil
	})
	return did, err
}

// sanitiseOld rewrites the data files of a table's hours before cut that
// hold rows not sanitised yet, in one overwrite snapshot. It returns the
// files replaced and the rows sanitised.
func (s *Sink) sanitiseOld(ctx context.Context, ident table.Identifier, cut time.Time, san Sanitiser) (files, rows int, err error) {
	if err := s.ensureSanitisedColumn(ctx, ident); err != nil {
		return 0, 0, err
	}
	filter := iceberg.LessThan(iceberg.Reference("dt"), iceberg.Timestamp(cut.UnixMicro()))
	var (
		written []iceberg.DataFile // files of the last attempt, removed when it conflicted
		wtbl    *table.Table
	)
	err = s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
		if len(written) > 0 {
			s.removeFiles(ctx, wtbl, written) // the attempt conflicted: nothing references them
			written = nil
		}
		files, rows = 0, 0
		if tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		field, ok := tbl.Schema().FindFieldByName(ColumnSanitised)
		if !ok {
			return nil, fmt.Errorf("column %s missing", ColumnSanitised)
		}
		tasks, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
		if err != nil {
			return nil, err
		}
		var todo []table.FileScanTask
		for _, task := range tasks {
			if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
				return nil, fmt.Errorf("data file %s has delete files: not written by this sink", task.File.FilePath())
			}
			if !allSanitised(task.File, field.ID) {
				todo = append(todo, task)
			}
		}
		if len(todo) == 0 {
			return nil, nil
		}
		_, itr, err := tbl.Scan().ReadTasks(ctx, todo)
		if err != nil {
			return nil, err
		}
		var out []row
		changed := 0
		for rec, err := range itr {
			if err != nil {
				return nil, err
			}
			for _, m := range rowsFromArrow(rec) {
				if done, _ := m[ColumnSanitised].(bool); !done {
					dt := m["dt"]
					m = san(m)
					if m == nil {
						m = map[string]any{}
					}
					m["dt"], m[ColumnSanitised] = dt, true
					changed++
				}
				out = append(out, row{values: m})
			}
			rec.Release()
		}
		if changed == 0 {
			return nil, nil // every row was sanitised already (no statistics said so)
		}
		asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].values = fitStruct(asc.Fields(), out[i].values)
		}
		props, err := offsetProps(tbl)
		if err != nil {
			return nil, err
		}
		written, err = s.writeFiles(ctx, tbl, out)
		if err != nil {
			return nil, err
		}
		wtbl = tbl
		old := make([]iceberg.DataFile, len(todo))
		for i, task := range todo {
			old[i] = task.File
		}
		txn := tbl.NewTransaction()
		if err := txn.ReplaceDataFilesWithDataFiles(ctx, old, written, props); err != nil {
			s.removeFiles(ctx, tbl, written)
			written = nil
			return nil, err
		}
		files, rows = len(old), changed
		return txn, nil
	})
	if err != nil && len(written) > 0 && isConflict(err) {
		s.removeFiles(ctx, wtbl, written)
	}
	return files, rows, err
}

// allSanitised reports whether a data file's statistics show that every
// row has ColumnSanitised = true (field id id).
func allSanitised(df iceberg.DataFile, id int) bool {
	nulls, ok := df.NullValueCounts()[id]
	if !ok || nulls != 0 {
		return false
	}
	lo, ok := df.LowerBoundValues()[id]
	return ok && len(lo) == 1 && lo[0] == 1
}

// ensureSanitisedColumn adds ColumnSanitised to a table that lacks it.
func (s *Sink) ensureSanitisedColumn(ctx context.Context, ident table.Identifier) error {
	return s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
		if _, ok := tbl.Schema().FindFieldByName(ColumnSanitised); ok {
			return nil, nil
		}
		txn := tbl.NewTransaction()
		upd := txn.UpdateSchema(true, false)
		upd.AddColumn([]string{ColumnSanitised}, iceberg.PrimitiveTypes.Bool, "true in rows the retention purge sanitised", false, nil)
		if err := upd.Commit(); err != nil {
			return nil, err
		}
		return txn, nil
	})
}

// rowsFromArrow converts a record batch read from a table to rows as the
// sink builds them: string, int64, float64, bool, time.Time and
// map[string]any values; nulls absent.
func rowsFromArrow(rec arrow.RecordBatch) []map[string]any {
	n := int(rec.NumRows())
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{}
	}
	for c, f := range rec.Schema().Fields() {
		col := rec.Column(c)
		for i := range n {
			if v := arrowValue(col, i); v != nil {
				out[i][f.Name] = v
			}
		}
	}
	return out
}

// arrowValue is the Go value of element i of an array (nil: null, or a
// type the sink does not write).
func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch x := a.(type) {
	case *array.String:
		return x.Value(i)
	case *array.LargeString:
		return x.Value(i)
	case *array.StringView:
		return x.Value(i)
	case *array.Int64:
		return x.Value(i)
	case *array.Int32:
		return int64(x.Value(i))
	case *array.Float64:
		return x.Value(i)
	case *array.Float32:
		return float64(x.Value(i))
	case *array.Boolean:
		return x.Value(i)
	case *array.Timestamp:
		unit := x.DataType().(*arrow.TimestampType).Unit
		return x.Value(i).ToTime(unit).UTC()
	case *array.Struct:
		st := x.DataType().(*arrow.StructType)
		m := map[string]any{}
		for j, f := range st.Fields() {
			if v := arrowValue(x.Field(j), i); v != nil {
				m[f.Name] = v
			}
		}
		return m
	}
	return nil
}

// fitStruct keeps the members of m that fit the fields' Arrow types;
// others (not a column, or a value of another type) are dropped: null.
func fitStruct(fields []arrow.Field, m map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		v, ok := m[f.Name]
		if !ok || v == nil {
			continue
		}
		if fv, ok := fit(f.Type, v); ok {
			out[f.Name] = fv
		}
	}
	return out
}

// fit returns v if it fits Arrow type t.
func fit(t arrow.DataType, v any) (any, bool) {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		_, ok := v.(string)
		return v, ok
	case arrow.INT64, arrow.INT32:
		_, ok := v.(int64)
		return v, ok
	case arrow.FLOAT64:
		_, ok := v.(float64)
		return v, ok
	case arrow.BOOL:
		_, ok := v.(bool)
		return v, ok
	case arrow.TIMESTAMP:
		_, ok := v.(time.Time)
		return v, ok
	case arrow.STRUCT:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		return fitStruct(t.(*arrow.StructType).Fields(), m), true
	}
	return nil, false
}

// Compaction defaults (Config.CompactEvery, Config.CompactAfter).
const (
	DefaultCompactEvery      = 60
	DefaultCompactAfter      = time.Hour
	DefaultSnapshotRetention = 7 * 24 * time.Hour
	DefaultSnapshotsKept     = 10
)

// Compact rewrites, in every table of the namespace, each hour partition
// that ended more than olderThan ago and has more than one data file into
// one file (more for hours over the table's target file size, 512 MiB by
// default), in one Iceberg replace snapshot per table (iceberg-go's
// RewriteFiles: readers see the old files or the new, never both or
// neither). The snapshot keeps the offsets of the one it follows; the old
// files stay until their snapshots expire (ExpireSnapshots). It returns
// the hour partitions compacted. Safe to call concurrently with the Sink's
// commits and other writers (a conflicting commit is retried on the
// refreshed table). Errors of one table do not stop the others.
func (s *Sink) Compact(ctx context.Context, olderThan time.Duration) (int, error) {
	idents, err := s.tableIdents(ctx)
	if err != nil {
		return 0, err
	}
	limit := s.cfg.Now().Add(-olderThan)
	total := 0
	var errs []error
	for _, ident := range idents {
		n, err := s.compactTable(ctx, ident, limit)
		if err != nil {
			errs = append(errs, fmt.Errorf("icebergsink: table %s: compact: %w", strings.Join(ident, "."), err))
		}
		if n > 0 {
			s.log.Info("iceberg table compacted", "table", strings.Join(ident, "."), "hours", n)
		}
		total += n
	}
	return total, errors.Join(errs...)
}

// compactTable compacts a table's hour partitions that ended by limit.
func (s *Sink) compactTable(ctx context.Context, ident table.Identifier, limit time.Time) (int, error) {
	var (
		written []iceberg.DataFile
		wtbl    *table.Table
		hours   int
	)
	err := s.retry(ctx, ident, func(tbl *table.Table) (*table.Transaction, error) {
		if len(written) > 0 {
			s.removeFiles(ctx, wtbl, written)
			written = nil
		}
		hours = 0
		if tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		spec := tbl.Spec()
		var hourField = -1
		for _, pf := range spec.Fields() {
			if _, ok := pf.Transform.(iceberg.HourTransform); ok && pf.Name == "dt_hour" {
				hourField = pf.FieldID
			}
		}
		if hourField < 0 {
			return nil, nil // not partitioned by the sink
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return nil, err
		}
		byHour := map[int64][]table.FileScanTask{}
		for _, task := range tasks {
			if task.File.SpecID() != int32(spec.ID()) || len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
				continue
			}
			h, ok := hourOf(task.File.Partition()[hourField])
			if !ok || time.Unix((h+1)*3600, 0).After(limit) {
				continue
			}
			byHour[h] = append(byHour[h], task)
		}
		props, err := offsetProps(tbl)
		if err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		rewrite := txn.NewRewrite(props)
		wtbl = tbl
		for _, h := range slices.Sorted(maps.Keys(byHour)) {
			group := byHour[h]
			if len(group) < 2 {
				continue
			}
			g := table.CompactionTaskGroup{PartitionKey: time.Unix(h*3600, 0).UTC().Format("2006-01-02T15"), Tasks: group}
			for _, t := range group {
				g.TotalSizeBytes += t.File.FileSizeBytes()
			}
			gr, err := table.ExecuteCompactionGroup(ctx, tbl, g)
			written = append(written, gr.NewDataFiles...)
			if err != nil {
				s.removeFiles(ctx, tbl, written)
				written = nil
				return nil, err
			}
			rewrite.ApplyResult(gr)
			hours++
		}
		if hours == 0 {
			return nil, nil
		}
		if err := rewrite.Commit(ctx); err != nil {
			s.removeFiles(ctx, tbl, written)
			written = nil
			return nil, err
		}
		return txn, nil
	})
	if err != nil {
		if len(written) > 0 && isConflict(err) {
			s.removeFiles(ctx, wtbl, written)
		}
		return 0, err
	}
	return hours, nil
}

// hourOf reads an hour partition value (hours since the epoch).
func hourOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}
