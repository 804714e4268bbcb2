package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // the s3:// warehouse IO
	"github.com/apache/iceberg-go/table"
)

// readIceberg reads uuid and webHost of every row of every table of the
// sink's namespace (eventlogging) through the SQL catalog in PostgreSQL,
// with iceberg-go: a scan of each table's current snapshot.
func readIceberg(ctx context.Context, dsn, warehouse string, re seqFinder, into map[uint64][]sighting) (foreign int, err error) {
	u, err := url.Parse(warehouse)
	if err != nil {
		return 0, err
	}
	q := u.Query()
	props := iceberg.Properties{
		icebergio.S3EndpointURL:            q.Get("endpoint"),
		icebergio.S3Region:                 q.Get("region"),
		icebergio.S3ForceVirtualAddressing: "false",
	}
	u.RawQuery = ""
	props["warehouse"] = strings.TrimSuffix(u.String(), "/")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }()
	cat, err := sqlcat.NewCatalog("eventlogging", db, sqlcat.Postgres, props)
	if err != nil {
		return 0, err
	}
	defer func() { _ = cat.Close() }()
	var idents []table.Identifier
	for id, err := range cat.ListTables(ctx, table.Identifier{"eventlogging"}) {
		if err != nil {
			return 0, err
		}
		idents = append(idents, id)
	}
	for _, id := range idents {
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			return 0, err
		}
		_, itr, err := tbl.Scan(table.WithSelectedFields("uuid", "webHost")).ToArrowRecords(ctx)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", strings.Join(id, "."), err)
		}
		for rec, err := range itr {
			if err != nil {
				return 0, fmt.Errorf("%s: %w", strings.Join(id, "."), err)
			}
			b, err := json.Marshal(rec)
			rec.Release()
			if err != nil {
				return 0, err
			}
			var rows []struct {
				UUID    string `json:"uuid"`
				WebHost string `json:"webHost"`
			}
			if err := json.Unmarshal(b, &rows); err != nil {
				return 0, err
			}
			for _, r := range rows {
				seq, ok := re(r.WebHost)
				if !ok {
					foreign++
					continue
				}
				into[seq] = append(into[seq], sighting{uuid: r.UUID, src: strings.Join(id, ".")})
			}
		}
	}
	return foreign, nil
}

// seqFinder returns the event sequence number of a marker.
type seqFinder func(string) (uint64, bool)
