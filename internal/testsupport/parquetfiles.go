package testsupport

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// WalkParquet opens each .parquet file under dir and calls fn with its
// path and the file. With skipMissing, a file or folder that disappears
// during the walk (or a dir not there yet) is passed over; otherwise it is
// an error.
func WalkParquet(dir string, skipMissing bool, fn func(path string, pf *parquet.File) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if skipMissing && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return fn(p, pf)
	})
}

// ParquetRows are the rows of pf, each as a map.
func ParquetRows(pf *parquet.File) ([]map[string]any, error) {
	r := parquet.NewGenericReader[map[string]any](pf, pf.Schema())
	defer func() { _ = r.Close() }()
	var out []map[string]any
	for {
		rows := make([]map[string]any, 16)
		for i := range rows {
			rows[i] = map[string]any{}
		}
		n, err := r.Read(rows)
		out = append(out, rows[:n]...)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// EachParquetValue calls fn with each value of column col of pf (every
// column when col < 0), page by page, until fn returns false.
func EachParquetValue(pf *parquet.File, col int, fn func(parquet.Value) bool) {
	for _, rg := range pf.RowGroups() {
		for i, cc := range rg.ColumnChunks() {
			if col >= 0 && i != col {
				continue
			}
			pages := cc.Pages()
			for {
				pg, err := pages.ReadPage()
				if err != nil {
					break
				}
				vals := make([]parquet.Value, pg.NumValues())
				n, _ := pg.Values().ReadValues(vals)
				for _, v := range vals[:n] {
					if !fn(v) {
						_ = pages.Close()
						return
					}
				}
			}
			_ = pages.Close()
		}
	}
}
