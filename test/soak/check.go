package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver
	"github.com/parquet-go/parquet-go"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// sighting is where one output record of an event was found.
type sighting struct {
	uuid string
	src  string // table or object key, for the report
}

// found is every output of the run, by event sequence number.
type found struct {
	sql, parquet map[uint64][]sighting
	// iceberg is nil when no Iceberg sink was deployed.
	iceberg map[uint64][]sighting
	errors  map[uint64]int
	// foreign are records whose marker is not of this run or cannot be
	// parsed; invented are sequence numbers never sent.
	foreign int
}

var errFindings = errors.New("findings")

func checkCmd(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("dir", "", "run directory of `soak run`")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *dir == "" {
		return fmt.Errorf("%w: --dir is required", errUsage)
	}
	start := time.Now()
	var info runInfo
	b, err := os.ReadFile(filepath.Join(*dir, "run.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return fmt.Errorf("run.json: %w", err)
	}
	acks, err := readAcks(filepath.Join(*dir, "acks.jsonl"))
	if err != nil {
		return err
	}
	marker := regexp.MustCompile(`bench-` + regexp.QuoteMeta(info.RunID) + `-([0-9]+)-`)
	f := &found{sql: map[uint64][]sighting{}, parquet: map[uint64][]sighting{}, errors: map[uint64]int{}}
	if err := readSQL(ctx, os.Getenv("EVENTLOGGING_POSTGRES_DSN"), marker, f); err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// The store's client takes the AWS SDK's default chain.
		_ = os.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("EVENTLOGGING_S3_ACCESS_KEY"))
		_ = os.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("EVENTLOGGING_S3_SECRET_KEY"))
	}
	if err := readParquet(ctx, info.Target, marker, f); err != nil {
		return fmt.Errorf("parquet on S3: %w", err)
	}
	if info.Warehouse != "" {
		f.iceberg = map[uint64][]sighting{}
		n, err := readIceberg(ctx, os.Getenv("EVENTLOGGING_POSTGRES_DSN"), info.Warehouse,
			func(s string) (uint64, bool) { return seqOf(marker, s) }, f.iceberg)
		if err != nil {
			return fmt.Errorf("iceberg: %w", err)
		}
		f.foreign += n
	}
	sinkErrors, err := readErrors(ctx, info.Brokers, marker, f)
	if err != nil {
		return fmt.Errorf("error topics: %w", err)
	}
	r := verdict(acks, f)
	r.sinkErrors = sinkErrors
	hist, err := readHistory(filepath.Join(*dir, "history.jsonl"))
	if err != nil {
		return err
	}
	r.print(w, info, hist, time.Since(start))
	if r.failed() {
		return errFindings
	}
	return nil
}

func readAcks(path string) (map[uint64]ack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[uint64]ack{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var a ack
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[a.Seq] = a
	}
	return out, sc.Err()
}

// seqOf returns the sequence number in a marker; false when s holds none
// of this run.
func seqOf(re *regexp.Regexp, s string) (uint64, bool) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}

// readSQL reads uuid and webHost of every row of every table that has both.
func readSQL(ctx context.Context, dsn string, re *regexp.Regexp, f *found) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name IN ('uuid', 'webHost')
		GROUP BY table_name HAVING count(*) = 2 ORDER BY table_name`)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			_ = rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	_ = rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		q := `SELECT uuid, "webHost" FROM "` + strings.ReplaceAll(t, `"`, `""`) + `"`
		rs, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		for rs.Next() {
			var uuid string
			var host sql.NullString
			if err := rs.Scan(&uuid, &host); err != nil {
				_ = rs.Close()
				return err
			}
			seq, ok := seqOf(re, host.String)
			if !ok {
				f.foreign++
				continue
			}
			f.sql[seq] = append(f.sql[seq], sighting{uuid: uuid, src: t})
		}
		_ = rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
	}
	return nil
}

// readParquet reads the uuid and webHost columns of every published
// Parquet object of the target.
func readParquet(ctx context.Context, target string, re *regexp.Regexp, f *found) error {
	st, err := objstore.Open(ctx, target)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	objs, err := st.List(ctx, "")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if strings.HasPrefix(o.Key, "_filesink/") || !strings.HasSuffix(o.Key, ".parquet") {
			continue
		}
		b, err := st.Get(ctx, o.Key)
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		uuids, err := column(pf, "uuid")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		hosts, err := column(pf, "webHost")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		if len(uuids) != len(hosts) || int64(len(uuids)) != pf.NumRows() {
			return fmt.Errorf("%s: %d rows, %d uuids, %d webHosts", o.Key, pf.NumRows(), len(uuids), len(hosts))
		}
		for i, h := range hosts {
			seq, ok := seqOf(re, h)
			if !ok {
				f.foreign++
				continue
			}
			f.parquet[seq] = append(f.parquet[seq], sighting{uuid: uuids[i], src: o.Key})
		}
	}
	return nil
}

// column returns the values of a top-level column as strings.
func column(pf *parquet.File, name string) ([]string, error) {
	leaf, ok := pf.Schema().Lookup(name)
	if !ok {
		return nil, fmt.Errorf("no column %s", name)
	}
	var out []string
	testsupport.EachParquetValue(pf, leaf.ColumnIndex, func(v parquet.Value) bool {
		if v.IsNull() {
			out = append(out, "")
		} else {
			out = append(out, v.String())
		}
		return true
	})
	return out, nil
}

// readErrors counts the EventErrors of each event in the processor's error
// topic, and returns how many records the sink error topic holds.
func readErrors(ctx context.Context, brokers []string, re *regexp.Regexp, f *found) (int, error) {
	cfg := kafka.Config{Brokers: brokers, ClientID: "soakcheck"}
	err := kafka.Read(ctx, kafka.ReadConfig{Kafka: cfg, Topic: errorTopic, AllPartitions: true}, func(r kafka.Record) error {
		var e struct {
			Schema string `json:"schema"`
			Event  struct {
				RawEvent string `json:"rawEvent"`
			} `json:"event"`
		}
		if json.Unmarshal(r.Value, &e) != nil || e.Schema != "EventError" {
			f.foreign++
			return nil
		}
		seq, ok := seqOf(re, e.Event.RawEvent)
		if !ok {
			f.foreign++
			return nil
		}
		f.errors[seq]++
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	err = kafka.Read(ctx, kafka.ReadConfig{Kafka: cfg, Topic: sinkErrTopic, AllPartitions: true}, func(kafka.Record) error {
		n++
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "UNKNOWN_TOPIC") && !strings.Contains(strings.ToLower(err.Error()), "does not exist") {
		return 0, err
	}
	return n, nil
}
