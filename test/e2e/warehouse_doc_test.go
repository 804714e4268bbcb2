package e2e

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// TestWarehouseDocAsWritten walks through docs/warehouse.md on the real S3
// store and the real HDFS: each target form of its table (local ones on
// the sink's start, the S3-compatible and HDFS forms with the test's
// bucket, directory and store address) and the start-up errors it quotes,
// from `eventlogging sink --files TARGET`; then, per store, a standalone
// with --files TARGET, examples/events.sh and capsules of three hours ago,
// and after its stop the documented layout (every key a documented one,
// the staging directory where the doc says), the pyarrow block and the
// DuckDB query (S3), `hdfs dfs -ls -R` (HDFS), and `eventlogging purge
// --files TARGET --policy FILE` deleting and sanitising the old hour; and
// the sizing benchmark's command. The steps it cannot run here are listed
// with the reason; a step the doc gains fails the test until it is run or
// listed.
func TestWarehouseDocAsWritten(t *testing.T) {
	srv := testsupport.S3(t)
	hdfs := testsupport.HDFS(t)
	py := testsupport.Python(t)
	w := newDocWalk(t, "../../docs/warehouse.md", []string{
		"eventlogging sink --files TARGET",
		"PREFIX/<topic>/year=YYYY/month=MM/day=DD/hour=HH/part-",
		"PREFIX/_filesink/manifests/",
		"PREFIX/_filesink/hours/",
		`filesink: s3://events/prod: bucket "events" does not exist`,
		"filesink: s3://events/prod: access denied",
		"filesink: s3://events/prod: cannot reach the store",
		`config: sink.files: unknown scheme "ftp"`,
		"SELECT … FROM read_parquet(",
		"import pyarrow.dataset as ds",
		"hdfs dfs -ls -R /PATH",
		"eventlogging purge --files TARGET --policy FILE",
		"go test -run '^$' -bench BenchmarkWriteTarget",
	}, map[string]string{
		"PREFIX/<topic>/year=YYYY/month=MM/day=DD/hour=HH/_SUCCESS": "an hour closes sink.lateness (1 h) after its end, longer than a test; internal/sink/filesink's tests close hours on a clock of their own",
		"CREATE EXTERNAL TABLE navigationtiming (":                  "Hive and Spark SQL (with Hadoop's s3a connector) are not installed here",
		"CREATE TABLE … WITH (":                                     "Trino is not installed here",
		"CALL system.sync_partition_metadata(":                      "Trino is not installed here",
		"spark.read.option(":                                        "Spark is not installed here",
	})
	bin := binary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Everything taken from the doc here, in the test's goroutine; the
	// subtests run in parallel.
	sinkLine := w.step("eventlogging sink --files TARGET").Text
	if sinkLine != "eventlogging sink --files TARGET" {
		t.Fatalf("the doc's sink command is %q", sinkLine)
	}
	layout := []string{
		w.step("PREFIX/<topic>/year=YYYY/month=MM/day=DD/hour=HH/part-").Text,
		w.step("PREFIX/_filesink/manifests/").Text,
		w.step("PREFIX/_filesink/hours/").Text,
	}
	errorLines := map[string]string{ // what the store lacks → the line the doc quotes
		"bucket":      w.step(`filesink: s3://events/prod: bucket "events" does not exist`).Text,
		"credentials": w.step("filesink: s3://events/prod: access denied").Text,
		"endpoint":    w.step("filesink: s3://events/prod: cannot reach the store").Text,
		"scheme":      w.step(`config: sink.files: unknown scheme "ftp"`).Text,
	}
	duckdbQuery := w.step("SELECT … FROM read_parquet(").Text
	pyarrowBlock := w.step("import pyarrow.dataset as ds").Text
	lsLine := w.step("hdfs dfs -ls -R /PATH").Text
	purgeLine := w.step("eventlogging purge --files TARGET --policy FILE").Text
	benchLine := w.step("go test -run '^$' -bench BenchmarkWriteTarget").Text
	targets := markdownTable(t, w.text, "## The target")
	credsRefused := w.span("s3://key:secret@bucket")
	creds := []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
	sink := func(t *testing.T, dir, target string, env ...string) *service {
		t.Helper()
		args := strings.Fields(strings.Replace(sinkLine, "eventlogging ", "", 1))
		args[len(args)-1] = target
		// Nothing listens on the broker's address: the sink opens its
		// target before it reaches Kafka. Its metrics port is off, so
		// that parallel sinks do not take the same.
		s := newService(t, bin, "sink", env, append(args, "--kafka-brokers", "127.0.0.1:1", "--metrics-listen", "off")...)
		s.cmd.Dir = dir
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s.killAtCleanup(t, 4000, func() bool { return true })
		return s
	}

	t.Run("targets", func(t *testing.T) {
		t.Parallel()
		// Each form of the table, as `sink --files` takes it: it opens
		// the target (the probe for a store) and says it runs.
		dir := t.TempDir()
		var forms [][2]string // the form, what it is
		for _, row := range targets {
			for _, f := range spansOf(row[0]) {
				forms = append(forms, [2]string{f, row[1]})
			}
		}
		for _, form := range forms {
			var target, check string // check: a path of the target the sink must have made
			switch f := form[0]; {
			case f == "/srv/events":
				target = filepath.Join(dir, "srv-events")
				check = filepath.Join(target, "_filesink")
			case f == "./files":
				target, check = f, filepath.Join(dir, "files", "_filesink")
			case f == "file:///srv/events":
				check = filepath.Join(dir, "file-url", "_filesink")
				target = "file://" + filepath.Dir(check)
			case strings.HasPrefix(f, "s3://BUCKET/PREFIX?endpoint="):
				u, err := url.Parse(f)
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("endpoint", srv.Endpoint)
				if q.Get("region") != srv.Region {
					t.Fatalf("the S3-compatible form's region %q is not the store's %q", q.Get("region"), srv.Region)
				}
				bucket := srv.Bucket(t)
				target = "s3://" + bucket + "/prefix?" + q.Encode()
			case strings.HasPrefix(f, "hdfs://NAMENODE:8020/PATH?"):
				target = strings.NewReplacer("NAMENODE:8020", hdfs.NameNode, "/PATH", hdfs.Dir(t)).Replace(f)
			case f == "s3://BUCKET/PREFIX?region=eu-west-1":
				t.Logf("not run here: %s (%s): Amazon S3 is not reachable from this machine", f, form[1])
				continue
			default:
				t.Errorf("target %q (%s): a form this test does not know: run it or say why not", f, form[1])
				continue
			}
			s := sink(t, dir, target, creds...)
			waitFor(t, 30*time.Second, "the sink on "+target+" to run", func() bool {
				return logHas(s.logs(), "file sink running")
			})
			if check != "" {
				if _, err := os.Stat(check); err != nil {
					t.Errorf("sink --files %s: %v", target, err)
				}
			}
			s.stop(t)
		}
		// Credentials in the URL are refused, and not printed.
		out, err := exec.CommandContext(t.Context(), bin, "sink", "--files", credsRefused, "--kafka-brokers", "127.0.0.1:1", "--metrics-listen", "off").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "credentials do not belong in the URL") || strings.Contains(string(out), "secret") {
			t.Errorf("sink --files %s: %v, printed\n%s\nwant a refusal that does not print the secret", credsRefused, err, out)
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		// Each start-up error the doc quotes, for the store's own reason.
		bucket := srv.Bucket(t)
		s3URL := func(bucket, endpoint string) string {
			return srv.URL(bucket, "prod", endpoint)
		}
		cases := map[string]struct {
			target string
			env    []string
		}{
			"bucket":      {s3URL("el-missing-"+strconv.FormatInt(time.Now().UnixNano(), 36), srv.Endpoint), creds},
			"credentials": {s3URL(bucket, srv.Endpoint), []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=not-" + srv.SecretKey}},
			"endpoint":    {s3URL(bucket, "http://"+freeAddr(t)), creds},
			"scheme":      {"ftp://events/prod", creds},
		}
		for what, c := range cases {
			u, _ := url.Parse(c.target)
			want := strings.NewReplacer("s3://events/prod", c.target, `"events"`, `"`+u.Host+`"`).Replace(errorLines[what])
			s := sink(t, t.TempDir(), c.target, c.env...)
			err := s.cmd.Wait()
			if err == nil || !strings.Contains(s.logs(), want) {
				t.Errorf("sink --files %s (%s): %v, printed\n%s\nwant %q", c.target, what, err, tail(s.logs(), 2000), want)
			}
		}
	})

	for _, store := range []string{"s3", "hdfs"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var target, prefix string
			var keys func() []string // the keys under the target, relative to it
			var bucket string
			if store == "s3" {
				bucket = srv.Bucket(t)
				prefix = "prod"
				target = srv.URL(bucket, prefix, srv.Endpoint)
				keys = func() []string { return s3Keys(t, srv, bucket, prefix) }
			} else {
				prefix = hdfs.Dir(t)
				target = "hdfs://" + hdfs.NameNode + prefix + "?user=analytics"
				keys = func() []string {
					// The doc's own listing: hdfs dfs -ls -R /PATH.
					args := strings.Fields(strings.Replace(strings.TrimPrefix(lsLine, "hdfs dfs "), "/PATH", prefix, 1))
					var out []string
					for l := range strings.Lines(hdfs.DFS(t, args...)) {
						if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "-") {
							out = append(out, strings.TrimPrefix(f[len(f)-1], prefix+"/"))
						}
					}
					return out
				}
			}
			work := docWorkDir(t, bin)
			tmp := filepath.Join(work, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			addr, broker := freeAddr(t), freeAddr(t)
			sa := newService(t, bin, "standalone", append([]string{"EVENTLOGGING_STANDALONE_KAFKA_LISTEN=" + broker, "TMPDIR=" + tmp}, creds...),
				"standalone", "--schemas", "examples/schemas", "--streams", "examples/streams.yaml", "--listen", addr, "--files", target)
			sa.cmd.Dir = work
			if err := sa.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sa.killAtCleanup(t, 4000, func() bool { return true })
			waitServing(t, "http://"+addr, sa)
			bash(t, work, nil, "examples/events.sh http://"+addr)
			old := time.Now().UTC().Add(-3 * time.Hour)
			produceOldCapsules(t, broker, old)
			// The file sink has every record in its files, and publishes
			// them when it stops.
			waitFor(t, 60*time.Second, "the file sink to write every record", func() bool {
				return sinkRowsOf(t, "http://"+addr, "eventlogging_sink_rows_total", "files") >= 4+2*oldCapsules
			})
			sa.stop(t)

			// The layout: every key a documented one, each documented
			// one there, the probe gone; the staging directory in the
			// temp directory.
			got := keys()
			matched := make([]int, len(layout))
			for _, k := range got {
				i := slices.IndexFunc(layout, func(l string) bool { return layoutPattern(l).MatchString(k) })
				if i < 0 {
					t.Errorf("key %s/%s is none of the doc's layout %q", prefix, k, layout)
					continue
				}
				matched[i]++
			}
			for i, n := range matched {
				if n == 0 {
					t.Errorf("no key is %q; the keys:\n%s", layout[i], strings.Join(got, "\n"))
				}
			}
			if staging, _ := filepath.Glob(filepath.Join(tmp, "eventlogging-filesink-*")); len(staging) != 1 {
				t.Errorf("the staging directory is not $TMPDIR/eventlogging-filesink-…: %v", staging)
			}
			oldHour := fmt.Sprintf("year=%04d/month=%02d/day=%02d/hour=%02d", old.Year(), old.Month(), old.Day(), old.Hour())

			if store == "s3" {
				// pyarrow, the doc's block on the test's store and bucket.
				u, err := url.Parse(srv.Endpoint)
				if err != nil {
					t.Fatal(err)
				}
				script := strings.NewReplacer(`"127.0.0.1:7070"`, `"`+u.Host+`"`, `"events/prod/`, `"`+bucket+"/"+prefix+"/").Replace(pyarrowBlock) +
					"\nprint(t.num_rows, sorted(set(t.column_names) & {'year', 'month', 'day', 'hour', 'uuid'}))\n"
				out := strings.TrimSpace(bash(t, work, creds, py+" -c "+shellQuote(script)))
				if want := fmt.Sprintf("%d ['day', 'hour', 'month', 'uuid', 'year']", 2+oldCapsules); out != want {
					t.Errorf("the pyarrow block read %q, want %q (the beacon, the hasty event and the old capsules; Hive partition columns)", out, want)
				}
				// DuckDB: its s3:// needs the httpfs extension, which
				// DuckDB downloads on first use and this machine
				// cannot; the query runs on a copy of the bucket.
				copyDir := downloadS3(t, srv, bucket, prefix)
				query := strings.NewReplacer("SELECT …", "SELECT count(*), count(DISTINCT (year, month, day, hour))", "s3://events/prod/", copyDir+"/").Replace(duckdbQuery)
				out = strings.TrimSpace(bash(t, work, nil, py+" -c "+shellQuote("import duckdb; print(duckdb.sql("+pyString(query)+").fetchall())")))
				hours := map[string]bool{}
				for _, k := range got {
					if dir, ok := strings.CutPrefix(path.Dir(k), "eventlogging_NavigationTiming/"); ok {
						hours[dir] = true
					}
				}
				if want := fmt.Sprintf("[(%d, %d)]", 2+oldCapsules, len(hours)); out != want {
					t.Errorf("DuckDB %s printed %s, want %s (rows, hour partitions)", query, out, want)
				}
			}

			// Retention: the hour of three hours ago is older than 2h;
			// NavigationTiming's is sanitised, SearchQuery's deleted.
			policy := filepath.Join(work, "policy.yaml")
			if err := os.WriteFile(policy, []byte("retention: 2h\nschemas:\n  NavigationTiming:\n    keep: [wiki]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			bash(t, work, creds, strings.NewReplacer("eventlogging ", bin+" ", "TARGET", shellQuote(target), "FILE", policy).Replace(purgeLine))
			after := keys()
			for _, k := range after {
				if strings.HasPrefix(k, "eventlogging_SearchQuery/"+oldHour+"/") {
					t.Errorf("purge left %s", k)
				}
			}
			nav := "eventlogging_NavigationTiming/" + oldHour + "/"
			var sanitised, marker, original bool
			for _, k := range after {
				switch {
				case !strings.HasPrefix(k, nav):
				case strings.HasSuffix(k, ".sanitised.parquet"):
					sanitised = true
				case path.Base(k) == "_SANITISED":
					marker = true
				case strings.HasSuffix(k, ".parquet"):
					original = true
				}
			}
			if !sanitised || !marker || original {
				t.Errorf("purge of %s: sanitised rewrite %v, _SANITISED %v, original left %v; the keys:\n%s", nav, sanitised, marker, original, strings.Join(after, "\n"))
			}
			if n := len(slices.DeleteFunc(slices.Clone(after), func(k string) bool { return strings.Contains(k, oldHour) })); n != len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return strings.Contains(k, oldHour) })) {
				t.Errorf("purge changed keys outside the old hour:\nbefore\n%s\nafter\n%s", strings.Join(got, "\n"), strings.Join(after, "\n"))
			}
		})
	}

	t.Run("sizing", func(t *testing.T) {
		t.Parallel()
		// The benchmark, as written, on the S3 store and the HDFS of the
		// test run: its numbers are this machine's, not checked.
		out := bash(t, root, nil, benchLine)
		for _, target := range []string{"local", "s3", "hdfs"} {
			if !regexp.MustCompile(`(?m)^BenchmarkWriteTarget/` + target + `-\d+\s+100\s.*rows/s`).MatchString(out) {
				t.Errorf("%s: no 100 runs of the %s target with rows/s:\n%s", benchLine, target, out)
			}
		}
	})
}

// oldCapsules is how many capsules of each schema produceOldCapsules
// writes.
const oldCapsules = 5

// produceOldCapsules writes capsules received at the time old to the
// per-schema topics of NavigationTiming and SearchQuery, as the processor
// would have.
func produceOldCapsules(t *testing.T, broker string, old time.Time) {
	t.Helper()
	cl := kafkaClient(t, []string{broker})
	var recs []*kgo.Record
	for i := range oldCapsules {
		for _, c := range []struct{ schema, event string }{
			{"NavigationTiming", `{"responseStart":100,"loadEventEnd":900}`},
			{"SearchQuery", `{"query":"old","results":1,"source":"fulltext"}`},
		} {
			rev := map[string]int{"NavigationTiming": 7, "SearchQuery": 5}[c.schema]
			topic := "eventlogging_" + c.schema
			v := fmt.Sprintf(`{"event":%s,"schema":%q,"revision":%d,"wiki":"enwiki","recvFrom":"old.example.org","seqId":%d,"timestamp":%d,"dt":%q,"uuid":%q,"topic":%q}`,
				c.event, c.schema, rev, i, old.Unix(), old.Format(time.RFC3339), capsule.UUID("old-"+c.schema, int64(i), old.Unix()), topic)
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// layoutPattern matches the keys of a line of the doc's layout
// (`PREFIX/<topic>/year=YYYY/…`, then maybe a description), relative to
// the prefix.
func layoutPattern(line string) *regexp.Regexp {
	key := strings.TrimPrefix(strings.Fields(line)[0], "PREFIX/")
	return regexp.MustCompile("^" + strings.NewReplacer(
		"<topic>", `eventlogging_[A-Za-z0-9_.]+`, "YYYY", `\d{4}`, "MM", `\d{2}`, "DD", `\d{2}`, "HH", `\d{2}`,
		"<partition>", `\d+`, "<first>", `\d+`, "<last>", `\d+`, "<schema>", `[^/]+`,
	).Replace(regexp.QuoteMeta(key)) + "$")
}

// s3Keys lists the keys under prefix/ in bucket, relative to it.
func s3Keys(t *testing.T, srv testsupport.S3Server, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(srv.Client(t), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), prefix+"/"))
		}
	}
	return keys
}

// downloadS3 copies the objects under prefix/ in bucket to a local
// directory, which it returns.
func downloadS3(t *testing.T, srv testsupport.S3Server, bucket, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	client := srv.Client(t)
	for _, k := range s3Keys(t, srv, bucket, prefix) {
		obj, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + k)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(obj.Body)
		obj.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pyString is s as a Python string literal.
func pyString(s string) string {
	return `"""` + strings.ReplaceAll(s, `"`, `\"`) + `"""`
}
