package testsupport

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/colinmarc/hdfs/v2"
)

func TestBucketName(t *testing.T) {
	for _, test := range []string{
		"TestX",
		"TestSink/Parquet_hourly/UTC+2",
		strings.Repeat("TestVeryLong", 20),
		"---",
	} {
		name := bucketName(test)
		if len(name) < 3 || len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
			t.Errorf("bucketName(%q) = %q: not a valid S3 bucket name", test, name)
		}
	}
	if a, b := bucketName("TestX"), bucketName("TestX"); a == b {
		t.Errorf("bucketName gave %q twice", a)
	}
}

// TestS3Server exercises what the file sink's S3 target relies on against
// the real store, so that a broken or misconfigured server fails the suite.
func TestS3Server(t *testing.T) {
	srv := S3(t)
	client := srv.Client(t)
	bucket := srv.Bucket(t)
	ctx := t.Context()

	put := func(key, body string) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body),
		}); err != nil {
			t.Fatalf("PutObject %s: %v", key, err)
		}
	}
	get := func(key string) []byte {
		t.Helper()
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject %s: %v", key, err)
		}
		defer func() { _ = out.Body.Close() }()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("GetObject %s: read: %v", key, err)
		}
		return b
	}
	list := func(prefix string) []string {
		t.Helper()
		var keys []string
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{
			Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(2),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("ListObjectsV2 %q: %v", prefix, err)
			}
			for _, o := range page.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
		}
		return keys
	}

	t.Run("put-get-list-delete", func(t *testing.T) {
		for _, k := range []string{"d/hour=00/a.jsonl.gz", "d/hour=00/b.jsonl.gz", "d/hour=01/c.jsonl.gz", "e/x"} {
			put(k, "body of "+k)
		}
		if got := string(get("d/hour=01/c.jsonl.gz")); got != "body of d/hour=01/c.jsonl.gz" {
			t.Errorf("GetObject = %q", got)
		}
		// Pages of two keys: the continuation token must work.
		if got, want := list("d/"), []string{"d/hour=00/a.jsonl.gz", "d/hour=00/b.jsonl.gz", "d/hour=01/c.jsonl.gz"}; !slices.Equal(got, want) {
			t.Errorf("ListObjectsV2 d/ = %q, want %q", got, want)
		}
		dirs, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(bucket), Prefix: aws.String("d/"), Delimiter: aws.String("/"),
		})
		if err != nil {
			t.Fatalf("ListObjectsV2 with delimiter: %v", err)
		}
		var prefixes []string
		for _, p := range dirs.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		if want := []string{"d/hour=00/", "d/hour=01/"}; !slices.Equal(prefixes, want) {
			t.Errorf("CommonPrefixes = %q, want %q", prefixes, want)
		}

		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("e/x")}); err != nil {
			t.Fatalf("DeleteObject: %v", err)
		}
		out, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: aws.String("d/hour=00/a.jsonl.gz")}, {Key: aws.String("d/hour=00/b.jsonl.gz")}},
		}})
		if err != nil || len(out.Errors) > 0 || len(out.Deleted) != 2 {
			t.Fatalf("DeleteObjects: %v, deleted %d, errors %+v", err, len(out.Deleted), out.Errors)
		}
		if got, want := list(""), []string{"d/hour=01/c.jsonl.gz"}; !slices.Equal(got, want) {
			t.Errorf("after deletes ListObjectsV2 = %q, want %q", got, want)
		}
		_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("e/x")})
		var notFound *types.NotFound
		if !errors.As(err, &notFound) {
			t.Errorf("HeadObject of a deleted key: %v, want NotFound", err)
		}
	})

	// Completing with the parts' ETags only, or with their checksums too; the
	// latter needs the upload created with that checksum algorithm (versitygw,
	// like S3, answers InvalidPart to CRC32s for an upload created without).
	for _, algo := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32} {
		t.Run("multipart-"+strings.ToLower(cmp.Or(string(algo), "etag")), func(t *testing.T) {
			key := "m/big-" + string(algo) + ".parquet"
			// S3's minimum part size, but for the last part.
			parts := [][]byte{bytes.Repeat([]byte("a"), 5<<20), []byte("tail")}
			up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
				Bucket: aws.String(bucket), Key: aws.String(key), ChecksumAlgorithm: algo,
			})
			if err != nil {
				t.Fatalf("CreateMultipartUpload: %v", err)
			}
			var done []types.CompletedPart
			for i, p := range parts {
				n := int32(i + 1)
				out, err := client.UploadPart(ctx, &s3.UploadPartInput{
					Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
					PartNumber: aws.Int32(n), Body: bytes.NewReader(p), ChecksumAlgorithm: algo,
				})
				if err != nil {
					t.Fatalf("UploadPart %d: %v", n, err)
				}
				part := types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag}
				if algo != "" {
					part.ChecksumCRC32 = out.ChecksumCRC32
				}
				done = append(done, part)
			}
			// Before completion the object does not exist and the upload is listed.
			if keys := list(key); len(keys) != 0 {
				t.Errorf("unfinished upload visible in ListObjectsV2: %q", keys)
			}
			if ups := uploads(t, client, bucket); !slices.Contains(ups, key) {
				t.Errorf("ListMultipartUploads = %q, want %s listed", ups, key)
			}
			if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
				Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: done},
			}); err != nil {
				t.Fatalf("CompleteMultipartUpload: %v", err)
			}
			if got := get(key); !bytes.Equal(got, slices.Concat(parts...)) {
				t.Errorf("completed object has %d bytes, want %d", len(got), len(parts[0])+len(parts[1]))
			}
			if ups := uploads(t, client, bucket); slices.Contains(ups, key) {
				t.Errorf("ListMultipartUploads after completion = %q", ups)
			}
		})
	}

	t.Run("abort-multipart", func(t *testing.T) {
		key := "m/abandoned.parquet"
		up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("CreateMultipartUpload: %v", err)
		}
		if _, err := client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader("part"),
		}); err != nil {
			t.Fatalf("UploadPart: %v", err)
		}
		if ups := uploads(t, client, bucket); !slices.Contains(ups, key) {
			t.Fatalf("ListMultipartUploads = %q, want %s listed", ups, key)
		}
		if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
		}); err != nil {
			t.Fatalf("AbortMultipartUpload: %v", err)
		}
		if ups := uploads(t, client, bucket); slices.Contains(ups, key) {
			t.Errorf("ListMultipartUploads after abort = %q", ups)
		}
		if keys := list("m/abandoned"); len(keys) != 0 {
			t.Errorf("aborted upload visible in ListObjectsV2: %q", keys)
		}
	})

	t.Run("if-none-match", func(t *testing.T) {
		// A conditional create: the second PUT of a key must fail.
		key := "c/once"
		for i, want := range []bool{true, false} {
			_, err := client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*"),
			})
			if (err == nil) != want {
				t.Errorf("conditional PutObject #%d: err %v, want success %v", i+1, err, want)
			}
		}
	})

	t.Run("wrong-secret", func(t *testing.T) {
		// A real store checks signatures (a mock might not).
		bad := srv
		bad.SecretKey = "wrong"
		_, err := bad.Client(t).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)},
			func(o *s3.Options) {
				o.Credentials = credentials.NewStaticCredentialsProvider(bad.AccessKey, bad.SecretKey, "")
			})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "SignatureDoesNotMatch" {
			t.Errorf("request with a wrong secret: %v, want SignatureDoesNotMatch", err)
		}
	})
}

// closeFile closes an HDFS file, calling Close again while it returns
// ErrReplicating: the DataNode has acknowledged the data but not yet
// reported the block to the NameNode (the Java client retries likewise).
func closeFile(t *testing.T, w *hdfs.FileWriter) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := w.Close()
		if err == nil {
			return
		}
		if !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			t.Fatalf("Close: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling the NameNode, with a deadline
	}
}

// uploads lists the keys of the bucket's unfinished multipart uploads.
func uploads(t *testing.T, client *s3.Client, bucket string) []string {
	t.Helper()
	out, err := client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// TestHDFSServer exercises what the file sink's HDFS target relies on,
// through github.com/colinmarc/hdfs/v2, and reads the result back with
// Hadoop's own shell, so that a broken cluster fails the suite.
func TestHDFSServer(t *testing.T) {
	srv := HDFS(t)
	client := srv.Client(t)
	dir := srv.Dir(t)

	tmp := path.Join(dir, "dt=2026-01-02", "hour=03", ".part-0.jsonl.gz.tmp")
	final := path.Join(dir, "dt=2026-01-02", "hour=03", "part-0.jsonl.gz")
	if err := client.MkdirAll(path.Dir(tmp), 0o755); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	w, err := client.Create(tmp)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	body := bytes.Repeat([]byte("{\"event\":1}\n"), 100_000) // 1.2 MB: more than one packet
	if _, err := w.Write(body); err != nil {
		t.Fatalf("Write: %v", err)
	}
	closeFile(t, w)
	if err := client.Rename(tmp, final); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	entries, err := client.ReadDir(path.Dir(final))
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	if len(entries) != 1 || entries[0].Name() != "part-0.jsonl.gz" || entries[0].Size() != int64(len(body)) {
		t.Fatalf("ReadDir after rename = %v, want part-0.jsonl.gz of %d bytes", entries, len(body))
	}
	got, err := client.ReadFile(final)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadFile: %d bytes, %v; want %d bytes", len(got), err, len(body))
	}
	// Creating over an existing file fails: a publish never overwrites by accident.
	if _, err := client.Create(final); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing file: %v, want os.ErrExist", err)
	}

	// Hadoop's own shell sees what the Go client wrote.
	if ls := srv.DFS(t, "-ls", "-R", dir); !strings.Contains(ls, final) || strings.Contains(ls, ".tmp") {
		t.Errorf("dfs -ls -R %s:\n%s", dir, ls)
	}
	if count := strings.Fields(srv.DFS(t, "-count", dir)); len(count) != 4 || count[1] != "1" {
		t.Errorf("dfs -count %s = %q, want 1 file", dir, count)
	}
	if cat := srv.DFS(t, "-cat", final); cat != string(body) {
		t.Errorf("dfs -cat returned %d bytes, want %d", len(cat), len(body))
	}

	if err := client.Remove(final); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := client.Stat(final); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat after Remove: %v, want os.ErrNotExist", err)
	}
}
