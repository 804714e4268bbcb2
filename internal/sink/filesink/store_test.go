package filesink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/eventlogging/eventlogging/internal/kafka"
	"github.com/eventlogging/eventlogging/internal/objstore"
	"github.com/eventlogging/eventlogging/internal/testsupport"
)

// s3Target returns the target URL of a fresh bucket of the test S3 store,
// with the AWS credentials in the environment as a user would set them.
func s3Target(t *testing.T) (target string, srv testsupport.S3Server, bucket string) {
	t.Helper()
	srv = testsupport.S3(t)
	bucket = srv.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	q := url.Values{"endpoint": {srv.Endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}
	return "s3://" + bucket + "/events?" + q.Encode(), srv, bucket
}

// hdfsTarget returns the target URL of a fresh directory of the test HDFS.
func hdfsTarget(t *testing.T) (string, testsupport.HDFSServer, string) {
	t.Helper()
	srv := testsupport.HDFS(t)
	dir := srv.Dir(t)
	return "hdfs://" + srv.NameNode + dir + "?user=" + testsupport.HDFSUser, srv, dir
}

// childRemoteEnv passes the target and staging directory to
// TestRemoteKill9Child.
const childRemoteEnv = "FILESINK_REMOTE_KILL_CHILD"

// The sink SIGKILLed five times while it uploads to a real S3 store and to
// a real HDFS, then run to the end: every record is published exactly
// once, in its hour, no unfinished upload is left behind, and (S3) pyarrow
// reads every uuid once.
func TestRemoteKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	t.Run("s3", func(t *testing.T) {
		target, srv, bucket := s3Target(t)
		remoteKill9(t, target)
		out, err := srv.Client(t).ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Uploads) > 0 {
			t.Errorf("%d multipart uploads left behind", len(out.Uploads))
		}
		checkPyarrow(t, srv, bucket, killInput())
	})
	t.Run("hdfs", func(t *testing.T) {
		target, srv, dir := hdfsTarget(t)
		remoteKill9(t, target)
		listing := srv.DFS(t, "-ls", "-R", dir)
		if strings.Contains(listing, ".objstore-tmp") {
			t.Errorf("hidden temp files left behind on HDFS:\n%s", listing)
		}
		// Hadoop's own shell sees the hour partitions the sink wrote.
		if !strings.Contains(listing, dir+"/events/eventlogging_Test/year=") && !strings.Contains(listing, dir+"/eventlogging_Test/year=") {
			t.Errorf("hdfs dfs -ls -R %s shows no hour partition:\n%.2000s", dir, listing)
		}
	})
}

func remoteKill9(t *testing.T, target string) {
	staging := t.TempDir()
	input := killInput()
	st, err := objstore.Open(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	manifests := func() map[string]string {
		out := map[string]string{}
		objs, err := st.List(t.Context(), manifestDir+"/")
		if err != nil {
			t.Logf("listing manifests: %v", err)
			return out
		}
		for _, o := range objs {
			if b, err := st.Get(t.Context(), o.Key); err == nil {
				out[o.Key] = string(b)
			}
		}
		return out
	}
	for round := range 5 {
		prev := manifests()
		progress := 0
		cmd, out := testsupport.StartChild(t, "TestRemoteKill9Child", childRemoteEnv+"="+target+"\n"+staging)
		want := 2 + rand.IntN(12)
		testsupport.WaitChild(t, cmd, out, 2*time.Minute, 20*time.Millisecond, fmt.Sprintf("round %d: the child made no progress", round), func() bool {
			now := manifests()
			progress += changed(prev, now)
			prev = now
			return progress >= want
		})
		testsupport.KillChild(t, cmd, fmt.Sprintf("round %d", round), out)
		pending := 0
		for _, m := range manifests() {
			if strings.Contains(m, `"pending"`) {
				pending++
			}
		}
		t.Logf("round %d: killed after %d checkpoints, %d manifests pending", round, progress, pending)
	}
	s := openSink(t, Config{Root: target, Staging: staging, Format: Parquet, Schemas: testSchemas(t)})
	feedAndClose(t, s, input, 500)
	local := testsupport.DownloadTree(t, target, stateDir+"/")
	p := checkExactlyOnce(t, local, input)
	checkNoTemps(t, staging)
	t.Logf("%d records in %d objects, exactly once after 5 kills", len(p.byUUID), len(p.files))
}

// TestRemoteKill9Child is the child of TestRemoteKill9.
func TestRemoteKill9Child(t *testing.T) {
	env := os.Getenv(childRemoteEnv)
	if env == "" {
		t.Skip("child process of TestRemoteKill9")
	}
	target, staging, _ := strings.Cut(env, "\n")
	s, err := Open(Config{Root: target, Staging: staging, Format: Parquet, Schemas: testSchemas(t), MaxFileBytes: 16 << 10, Logger: testsupport.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newFeeder(killInput(), 500).run(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

// checkPyarrow reads the bucket with pyarrow (S3FileSystem, a reader
// nobody here wrote): every input uuid once, rows per hour partition as
// the input's.
func checkPyarrow(t *testing.T, srv testsupport.S3Server, bucket string, input []kafka.Record) {
	t.Helper()
	got := testsupport.PyarrowS3(t, srv, bucket, "events")
	wantHours := map[string]int{}
	for _, r := range input {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			continue
		}
		dt, _ := time.Parse(time.RFC3339, m["dt"].(string))
		wantHours[hourDir(r.Topic, dt.Truncate(time.Hour).Unix())]++
		if n := got.UUIDs[testsupport.EventUUID(r.Topic, r.Partition, r.Offset)]; n != 1 {
			t.Fatalf("pyarrow read uuid %s %d times", testsupport.EventUUID(r.Topic, r.Partition, r.Offset), n)
		}
	}
	if len(got.UUIDs) != len(input) {
		t.Errorf("pyarrow read %d distinct uuids, want %d", len(got.UUIDs), len(input))
	}
	if fmt.Sprint(got.Hours) != fmt.Sprint(wantHours) {
		t.Errorf("rows per hour partition (pyarrow) %v, want %v", got.Hours, wantHours)
	}
	t.Logf("pyarrow read %d uuids from %d files in %d hour partitions", len(got.UUIDs), got.Files, len(got.Hours))
}

// privateS3 starts a versitygw of the test's own (scripts/s3.sh on another
// port, data in a temp directory), so that stopping it disturbs no other
// test; it returns the server and a function running s3.sh subcommands.
func privateS3(t *testing.T) (testsupport.S3Server, func(cmd string)) {
	t.Helper()
	testsupport.S3(t) // skips or fails like every S3 test when there is none
	script, err := filepath.Abs("../../../scripts/s3.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	env := append(os.Environ(), "EVENTLOGGING_S3_PORT=39333", "S3_RUN_DIR="+run)
	s3sh := func(cmd string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, script, cmd)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/s3.sh %s: %v\n%s", cmd, err, out)
		}
	}
	s3sh("start")
	t.Cleanup(func() { s3sh("stop") })
	srv := testsupport.S3Server{Endpoint: "http://127.0.0.1:39333", Region: "us-east-1",
		AccessKey: os.Getenv(testsupport.EnvS3AccessKey), SecretKey: os.Getenv(testsupport.EnvS3SecretKey)}
	return srv, s3sh
}

// The object store stopped for 60 s in the middle of a run, then started
// again: the sink never breaks (each failed batch is retried, as sink.Run
// does), consumes nothing it cannot hold, and once the store is back every
// record is published exactly once.
func TestRemoteStoreStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a store for 60 s")
	}
	srv, s3sh := privateS3(t)
	bucket := srv.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	target := "s3://" + bucket + "/events?" + url.Values{"endpoint": {srv.Endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}.Encode()
	s := openSink(t, Config{Root: target, Staging: t.TempDir(), Format: Parquet, Schemas: testSchemas(t), MaxFileBytes: 32 << 10})
	input := spread([]string{"eventlogging_Test"}, 3, 4000, 3)
	f := newFeeder(input, 200)
	offs, err := s.StartOffsets(t.Context(), f.assigned())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range offs["eventlogging_Test"] {
		if p != 0 {
			t.Fatalf("start offsets %v", offs)
		}
	}
	var batches [][]kafka.Record
	for i := 0; i < len(input); i += 200 {
		batches = append(batches, input[i:min(i+200, len(input))])
	}
	stopped, restarted := false, time.Time{}
	failures := 0
	for i := 0; i < len(batches); {
		if i == len(batches)/3 && !stopped {
			s3sh("stop")
			stopped = true
			restarted = time.Now().Add(60 * time.Second)
		}
		if stopped && !restarted.IsZero() && time.Now().After(restarted) {
			s3sh("start")
			restarted = time.Time{}
		}
		_, err := s.Write(t.Context(), batches[i])
		if err != nil {
			if errors.Is(err, ErrBroken) {
				t.Fatalf("the store's outage broke the sink: %v", err)
			}
			failures++
			time.Sleep(time.Second) // the runner's backoff
			continue
		}
		i++
	}
	if !restarted.IsZero() {
		s3sh("start")
	}
	if failures == 0 {
		t.Fatal("no write failed while the store was stopped: the test tests nothing")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := checkExactlyOnce(t, testsupport.DownloadTree(t, target, stateDir+"/"), input)
	out, err := srv.Client(t).ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) > 0 {
		t.Errorf("%d multipart uploads left behind", len(out.Uploads))
	}
	t.Logf("%d batches failed while the store was stopped for 60 s; %d records exactly once in %d objects", failures, len(p.byUUID), len(p.files))
}

// BenchmarkWriteTarget compares the same Parquet writes to a local root
// and to the test S3 store on loopback (1,000-record batches of the
// BenchmarkWrite capsules, 8 MiB files, so uploads happen all along, and
// the final Close's upload included):
//
//	go test -run '^$' -bench BenchmarkWriteTarget -benchtime 100x ./internal/sink/filesink
func BenchmarkWriteTarget(b *testing.B) {
	run := func(b *testing.B, cfg Config) {
		cfg.Format, cfg.Schemas, cfg.MaxFileBytes = Parquet, testSchemas(b), 8<<20
		cfg.Logger = testsupport.Logger(b)
		benchWrite(b, cfg)
	}
	b.Run("local", func(b *testing.B) { run(b, Config{Root: b.TempDir()}) })
	b.Run("s3", func(b *testing.B) {
		srv := testsupport.S3(b)
		bucket := srv.Bucket(b)
		b.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
		b.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
		q := url.Values{"endpoint": {srv.Endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}
		run(b, Config{Root: "s3://" + bucket + "/events?" + q.Encode(), Staging: b.TempDir()})
	})
	b.Run("hdfs", func(b *testing.B) {
		srv := testsupport.HDFS(b)
		run(b, Config{Root: "hdfs://" + srv.NameNode + srv.Dir(b) + "?user=" + testsupport.HDFSUser, Staging: b.TempDir()})
	})
}

// A target that cannot work is refused at Open, quickly, with what to fix:
// a missing bucket, wrong credentials, an endpoint or a namenode nobody
// answers at.
func TestRemoteBadStore(t *testing.T) {
	srv := testsupport.S3(t)
	bucket := srv.Bucket(t)
	s3url := func(bucket, endpoint string) string {
		return "s3://" + bucket + "/events?" + url.Values{"endpoint": {endpoint}, "region": {srv.Region}, "use_path_style": {"true"}}.Encode()
	}
	for _, tc := range []struct {
		name, target, secret, want string
	}{
		{"missing bucket", s3url("no-such-bucket-here", srv.Endpoint), srv.SecretKey, `bucket "no-such-bucket-here" does not exist`},
		{"wrong credentials", s3url(bucket, srv.Endpoint), "not-the-secret", "access denied: check the credentials"},
		{"unreachable endpoint", s3url(bucket, "http://127.0.0.1:9"), srv.SecretKey, "cannot reach the store"},
		{"unreachable namenode", "hdfs://127.0.0.1:9/events", "", "cannot reach the namenode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			start := time.Now()
			_, err := Open(Config{Root: tc.target, Staging: t.TempDir(), Format: JSONLines})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error with %q", err, tc.want)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
			if d := time.Since(start); d > 40*time.Second {
				t.Errorf("Open took %v to fail", d)
			}
			t.Logf("%v (after %v)", err, time.Since(start).Round(time.Millisecond))
		})
	}
}
