package icebergsink

import (
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// A warehouse in an S3 bucket (the test store, path-style, credentials
// from the environment as the AWS SDK reads them): the sink writes,
// compacts and purges there, and PyIceberg — with its own S3 client —
// reads every uuid once.
func TestS3Warehouse(t *testing.T) {
	srv := testsupport.S3(t)
	py := python(t)
	bucket := srv.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	q := url.Values{"endpoint": {srv.Endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}
	warehouse := "s3://" + bucket + "/warehouse?" + q.Encode()
	e := env{catalog: "sqlite:///" + filepath.Join(t.TempDir(), "catalog.db"), warehouse: warehouse, schemas: testSchemas(t)}
	s := openSink(t, e.config(t))
	const topic = "eventlogging_Test"
	input := spread(topic, 2, 1000, 3) // hours 7, 8, 9
	for i := 0; i < len(input); i += 500 {
		feed(t, s, input[i:i+500], 250)
		flush(t, s)
	}
	began := time.Now()
	n, err := s.Compact(t.Context(), 0)
	if err != nil || n != 3 {
		t.Fatalf("compact: %d hours, %v; want 3", n, err)
	}
	t.Logf("compacted 3 hours on S3 in %s", time.Since(began).Round(time.Millisecond))
	if _, err := s.Purge(t.Context(), base.Add(time.Hour)); err != nil { // hour 7
		t.Fatal(err)
	}
	if err := s.ExpireSnapshots(t.Context(), 1, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"s3.endpoint": srv.Endpoint, "s3.region": srv.Region,
		"s3.access-key-id": srv.AccessKey, "s3.secret-access-key": srv.SecretKey,
	}
	got := readAllWithPyIceberg(t, py, e.catalog, "s3://"+bucket+"/warehouse", props)
	var want []string
	for _, r := range input {
		if !r.Timestamp.Add(-time.Second).Before(base.Add(time.Hour)) { // capsuleRecord: Timestamp = dt + 1s
			want = append(want, testsupport.EventUUID(r.Topic, r.Partition, r.Offset))
		}
	}
	if got.Rows != len(want) || len(got.UUIDs) != len(want) {
		t.Errorf("pyiceberg read %d rows, %d uuids; want %d (hours 8 and 9)", got.Rows, len(got.UUIDs), len(want))
	}
	for _, u := range want {
		if got.UUIDs[u] != 1 {
			t.Fatalf("uuid %s read %d times", u, got.UUIDs[u])
		}
	}
	snaps := got.Snapshots["Test"]
	if len(snaps) != 1 || snaps[0].Complete != `{"eventlogging_Test":{"0":999,"1":999}}` {
		t.Errorf("snapshots after expiry: %+v", snaps)
	}
}
