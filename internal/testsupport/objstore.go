package testsupport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/colinmarc/hdfs/v2"
)

// The environment variables scripts/s3.sh and scripts/hdfs.sh print, and
// scripts/test.sh exports.
const (
	// EnvS3Endpoint is the URL of the test S3 store, e.g. http://127.0.0.1:38333;
	// it wants path-style addressing.
	EnvS3Endpoint = "EVENTLOGGING_S3_ENDPOINT"
	// EnvS3Region is its region, us-east-1.
	EnvS3Region = "EVENTLOGGING_S3_REGION"
	// EnvS3AccessKey is its access key id.
	EnvS3AccessKey = "EVENTLOGGING_S3_ACCESS_KEY"
	// EnvS3SecretKey is its secret access key.
	EnvS3SecretKey = "EVENTLOGGING_S3_SECRET_KEY"
	// EnvHDFSNameNode is the RPC address of the test HDFS NameNode, e.g. 127.0.0.1:38020.
	EnvHDFSNameNode = "EVENTLOGGING_HDFS_NAMENODE"
)

// cleanupTimeout bounds the emptying of a test's bucket or directory at
// cleanup, after the test's context is gone.
const cleanupTimeout = 30 * time.Second

// HDFSUser is the user the HDFS helpers act as. The test cluster has
// permissions off, so any user may write anywhere.
const HDFSUser = "eventlogging"

// S3Server is the real S3-compatible store (versitygw) started by
// scripts/test.sh or scripts/s3.sh.
type S3Server struct {
	Endpoint  string // http://host:port, path-style
	Region    string
	AccessKey string
	SecretKey string
}

// S3 returns the test S3 store, or skips (locally) / fails (CI=true) the test
// when EnvS3Endpoint is not set.
func S3(tb testing.TB) S3Server {
	tb.Helper()
	srv := S3Server{
		Endpoint:  integrationEnv(tb, EnvS3Endpoint, "S3", `set -a; eval "$(scripts/s3.sh start)"; set +a`),
		Region:    os.Getenv(EnvS3Region),
		AccessKey: os.Getenv(EnvS3AccessKey),
		SecretKey: os.Getenv(EnvS3SecretKey),
	}
	if srv.Region == "" {
		srv.Region = "us-east-1"
	}
	if srv.AccessKey == "" || srv.SecretKey == "" {
		tb.Fatalf("testsupport: %s is set but %s or %s is not (eval the output of scripts/s3.sh start)",
			EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
	}
	return srv
}

// Client returns an AWS SDK v2 S3 client for the store: static credentials,
// path-style addressing, the SDK's default checksums and retries (without its
// log line for each multipart object whose checksum it cannot validate).
func (s S3Server) Client(tb testing.TB) *s3.Client {
	tb.Helper()
	cfg, err := config.LoadDefaultConfig(tb.Context(),
		config.WithRegion(s.Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")),
	)
	if err != nil {
		tb.Fatalf("testsupport: AWS SDK config: %v", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// Bucket creates a bucket of the test's own, named after the test and unique
// to this run, and at cleanup aborts its unfinished multipart uploads,
// deletes its objects and the bucket.
func (s S3Server) Bucket(tb testing.TB) string {
	tb.Helper()
	client := s.Client(tb)
	name := bucketName(tb.Name())
	if _, err := client.CreateBucket(tb.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("testsupport: create bucket %s on %s: %v", name, s.Endpoint, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := removeBucket(ctx, client, name); err != nil {
			tb.Errorf("testsupport: remove bucket %s: %v", name, err)
		}
	})
	return name
}

// Target creates a bucket of the test's own (Bucket), sets the store's
// credentials in the test's environment as a user would
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), and returns the bucket and
// the target URL of prefix in it (URL).
func (s S3Server) Target(tb testing.TB, prefix string) (target, bucket string) {
	tb.Helper()
	bucket = s.Bucket(tb)
	tb.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	return s.URL(bucket, prefix, s.Endpoint), bucket
}

// URL returns the s3:// target URL of prefix in bucket, reached at
// endpoint (the store's own, or a proxy in front of it) with the store's
// region and path-style addressing.
func (s S3Server) URL(bucket, prefix, endpoint string) string {
	q := url.Values{"endpoint": {endpoint}, "region": {s.Region}, "use_path_style": {"true"}}
	return "s3://" + bucket + "/" + prefix + "?" + q.Encode()
}

// removeBucket empties and deletes a bucket.
func removeBucket(ctx context.Context, client *s3.Client, bucket string) error {
	uploads := s3.NewListMultipartUploadsPaginator(client, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	for uploads.HasMorePages() {
		page, err := uploads.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list multipart uploads: %w", err)
		}
		for _, u := range page.Uploads {
			if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId,
			}); err != nil {
				return fmt.Errorf("abort multipart upload of %s: %w", aws.ToString(u.Key), err)
			}
		}
	}
	objects := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for objects.HasMorePages() {
		page, err := objects.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list objects: %w", err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		out, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("delete objects: %w", err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete objects: %d failed, first %s: %s", len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("delete bucket: %w", err)
	}
	return nil
}

var notBucketChars = regexp.MustCompile(`[^a-z0-9]+`)

// bucketName makes a valid S3 bucket name (3-63 characters: lower-case
// letters, digits, hyphens) from the test name and a suffix unique to this run.
func bucketName(test string) string {
	suffix := uniqueSuffix()
	base := strings.Trim(notBucketChars.ReplaceAllString(strings.ToLower(test), "-"), "-")
	if room := 63 - len("el--") - len(suffix); len(base) > room {
		base = strings.TrimRight(base[:room], "-")
	}
	if base == "" {
		return "el-" + suffix
	}
	return "el-" + base + "-" + suffix
}

var objstoreSeq atomic.Int64

// uniqueSuffix is unique among the test processes of one run: pid, time and a counter.
func uniqueSuffix() string {
	return fmt.Sprintf("%d-%d-%d", os.Getpid(), time.Now().UnixMilli()%1e8, objstoreSeq.Add(1))
}

// HDFSServer is the real HDFS (Hadoop's MiniDFSCluster) started by
// scripts/test.sh or scripts/hdfs.sh.
type HDFSServer struct {
	NameNode string // RPC address, host:port
}

// HDFS returns the test HDFS cluster, or skips (locally) / fails (CI=true)
// the test when EnvHDFSNameNode is not set.
func HDFS(tb testing.TB) HDFSServer {
	tb.Helper()
	nn := integrationEnv(tb, EnvHDFSNameNode, "HDFS", `set -a; eval "$(scripts/hdfs.sh start)"; set +a`)
	if _, _, err := net.SplitHostPort(nn); err != nil {
		tb.Fatalf("testsupport: %s=%q is not host:port: %v", EnvHDFSNameNode, nn, err)
	}
	return HDFSServer{NameNode: nn}
}

// Client returns a github.com/colinmarc/hdfs/v2 client acting as HDFSUser,
// closed at cleanup.
func (h HDFSServer) Client(tb testing.TB) *hdfs.Client {
	tb.Helper()
	c, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{h.NameNode}, User: HDFSUser})
	if err != nil {
		tb.Fatalf("testsupport: connect to HDFS at %s: %v", h.NameNode, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Dir creates a directory of the test's own, /eventlogging-test/<name>, and
// removes it with its contents at cleanup.
func (h HDFSServer) Dir(tb testing.TB) string {
	tb.Helper()
	c := h.Client(tb)
	name := bucketName(tb.Name())
	dir := path.Join("/eventlogging-test", name)
	if err := c.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("testsupport: create %s on HDFS at %s: %v", dir, h.NameNode, err)
	}
	tb.Cleanup(func() {
		// The client has no context: a cluster that hangs (paused) would
		// hang the cleanup, so it runs with a deadline of its own.
		done := make(chan error, 1)
		go func() { done <- c.RemoveAll(dir) }()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				tb.Errorf("testsupport: remove %s from HDFS: %v", dir, err)
			}
		case <-time.After(cleanupTimeout):
			tb.Errorf("testsupport: remove %s from HDFS: no answer within %v", dir, cleanupTimeout)
		}
	})
	return dir
}

// DFS runs Hadoop's own shell against the cluster (scripts/hdfs.sh dfs ARGS,
// i.e. `hdfs dfs ARGS`: -ls -R /, -cat FILE, -count DIR ...) and returns its
// standard output. It fails the test when the shell exits non-zero.
func (h HDFSServer) DFS(tb testing.TB, args ...string) string {
	tb.Helper()
	_, port, err := net.SplitHostPort(h.NameNode)
	if err != nil {
		tb.Fatalf("testsupport: NameNode address %q: %v", h.NameNode, err)
	}
	script := filepath.Join(repoRoot(tb), "scripts", "hdfs.sh")
	cmd := exec.CommandContext(tb.Context(), script, append([]string{"dfs"}, args...)...)
	cmd.Env = append(os.Environ(), "EVENTLOGGING_HDFS_PORT="+port, "HADOOP_USER_NAME="+HDFSUser)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("testsupport: scripts/hdfs.sh dfs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// repoRoot is the directory of go.mod above the working directory (a
// package's directory under go test).
func repoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("testsupport: no go.mod above the working directory")
		}
		dir = parent
	}
}

// integrationEnv returns the value of env, or skips (locally) / fails
// (CI=true) the test when it is unset, as internal/kafkatest and
// internal/dbtest do for their servers.
func integrationEnv(tb testing.TB, env, server, howto string) string {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: under CI=true integration tests must run against a real %s server (scripts/test.sh starts one)", env, server)
		}
		tb.Skipf("integration test: %s not set; run scripts/test.sh, or: %s", env, howto)
	}
	return v
}
