package objstore

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s; used to check one, not to protect anything
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// PartSize is the size of a multipart upload's parts; files up to it are
// uploaded with one PUT.
const PartSize = 16 << 20

// s3Store is a bucket and a key prefix of an S3-compatible store.
type s3Store struct {
	c      *s3.Client
	creds  aws.CredentialsProvider
	bucket string
	prefix string // "" or ending in "/"
	target string
}

// openS3 builds the client for s3://BUCKET/PREFIX?endpoint=&region=&use_path_style=.
func openS3(ctx context.Context, u *url.URL) (*s3Store, error) {
	bucket := u.Host
	if bucket == "" {
		return nil, fmt.Errorf("target %q: no bucket (s3://BUCKET/PREFIX)", u.Redacted())
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "use_path_style":
		default:
			return nil, fmt.Errorf("target %q: unknown parameter %q (want endpoint, region, use_path_style)", u.Redacted(), k)
		}
	}
	var opts []func(*awsconfig.LoadOptions) error
	if r := q.Get("region"); r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	}
	// Not every S3-compatible store accepts the checksums newer SDKs add
	// to every request: only send them where the API requires.
	opts = append(opts,
		awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	)
	pathStyle := false
	if v := q.Get("use_path_style"); v != "" {
		var err error
		if pathStyle, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("target %q: use_path_style=%q: want true or false", u.Redacted(), v)
		}
	}
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		e, err := url.Parse(endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("target %q: endpoint %q: want http(s)://HOST[:PORT]", u.Redacted(), endpoint)
		}
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("target %q: AWS configuration: %w", u.Redacted(), err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
	})
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &s3Store{c: c, creds: cfg.Credentials, bucket: bucket, prefix: prefix, target: u.Redacted()}, nil
}

func (s *s3Store) String() string { return s.target }
func (s *s3Store) Close() error   { return nil }

func (s *s3Store) key(k string) (*string, error) {
	if err := cleanKey(k); err != nil {
		return nil, err
	}
	return aws.String(s.prefix + k), nil
}

// isNotFound reports whether err is S3's answer for a missing key.
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

func (s *s3Store) wrap(op, key string, err error) error {
	return fmt.Errorf("s3 %s s3://%s/%s%s: %w", op, s.bucket, s.prefix, key, err)
}

func (s *s3Store) Put(ctx context.Context, key string, b []byte) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	_, err = s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: k, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))})
	if err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}

// GetVersion implements Store: the version is the ETag.
func (s *s3Store) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, "", err
	}
	// A store that keeps an object's metadata apart from its data can
	// answer a GET made during a PUT with the body of one and the ETag of
	// the other (versitygw with sidecar metadata does, in about one read
	// of five under concurrent writes): a compare-and-swap on that ETag
	// would then overwrite content nobody read, and the file sink's fence
	// would let a second writer in (the chaos soak's seed 30). So the
	// body must be the ETag's: an ETag that is an MD5 (a single-part
	// upload's, as S3 makes it unless the object is encrypted with KMS or
	// a customer key) must be the body's MD5, else the object is read
	// again; an ETag that is no MD5 of the body is taken once the same
	// body and ETag were read consistentReads times in a row.
	var prevTag string
	var prevSum [md5.Size]byte
	same := 0
	for attempt := 1; ; attempt++ {
		b, etag, err := s.getOnce(ctx, k, key)
		if err != nil {
			return nil, "", err
		}
		sum := md5.Sum(b)
		if strings.Trim(etag, `"`) == hex.EncodeToString(sum[:]) {
			return b, etag, nil
		}
		if etag == prevTag && sum == prevSum {
			same++
		} else {
			same = 1
		}
		if same >= consistentReads {
			return b, etag, nil
		}
		if attempt >= maxVersionReads {
			return nil, "", s.wrap("get", key, fmt.Errorf("%d reads gave bodies that are not their ETag's: the store cannot fence writers", attempt))
		}
		prevTag, prevSum = etag, sum
		t := time.NewTimer(time.Duration(attempt) * 20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, "", s.wrap("get", key, ctx.Err())
		case <-t.C:
		}
	}
}

// consistentReads and maxVersionReads bound GetVersion's reads of an
// object whose body is not its ETag's MD5.
const (
	consistentReads = 5
	maxVersionReads = 20
)

func (s *s3Store) getOnce(ctx context.Context, k *string, key string) ([]byte, string, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: k})
	if err != nil {
		if isNotFound(err) {
			return nil, "", notExist(key)
		}
		return nil, "", s.wrap("get", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", s.wrap("get", key, err)
	}
	return b, aws.ToString(out.ETag), nil
}

// PutIf implements Store with a conditional PutObject: If-Match the ETag,
// or If-None-Match "*" for an object that must not exist yet.
func (s *s3Store) PutIf(ctx context.Context, key string, b []byte, match string) (string, error) {
	k, err := s.key(key)
	if err != nil {
		return "", err
	}
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: k, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))}
	if match == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(match)
	}
	out, err := s.c.PutObject(ctx, in)
	if err != nil {
		// If-Match of a key that is gone is answered 404.
		if isS3Precondition(err) || (match != "" && isNotFound(err)) {
			return "", fmt.Errorf("%w: %w", ErrPrecondition, s.wrap("put", key, err))
		}
		return "", s.wrap("put", key, err)
	}
	if out.ETag == nil {
		return "", s.wrap("put", key, errors.New("the store answered without an ETag: it cannot fence writers"))
	}
	return aws.ToString(out.ETag), nil
}

func (s *s3Store) PutFile(ctx context.Context, key, p string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() <= PartSize {
		_, err = s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: k, Body: io.NewSectionReader(f, 0, fi.Size()), ContentLength: aws.Int64(fi.Size())})
		if err != nil {
			return s.wrap("put", key, err)
		}
		return nil
	}
	return s.multipart(ctx, key, k, f, fi.Size())
}

// multipart uploads f in PartSize parts; the object appears when the upload
// completes. A failed upload is aborted; one a crash left behind is
// aborted by AbortUploads at the next start.
func (s *s3Store) multipart(ctx context.Context, key string, k *string, f *os.File, size int64) error {
	up, err := s.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: k})
	if err != nil {
		return s.wrap("create multipart upload", key, err)
	}
	abort := func(err error) error {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, aerr := s.c.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: k, UploadId: up.UploadId}); aerr != nil {
			err = errors.Join(err, s.wrap("abort multipart upload", key, aerr))
		}
		return err
	}
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+PartSize {
		l := min(PartSize, size-off)
		out, err := s.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &s.bucket, Key: k, UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: io.NewSectionReader(f, off, l), ContentLength: aws.Int64(l)})
		if err != nil {
			return abort(s.wrap("upload part", key, err))
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	_, err = s.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &s.bucket, Key: k, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return abort(s.wrap("complete multipart upload", key, err))
	}
	return nil
}

func (s *s3Store) get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: k})
	if err != nil {
		if isNotFound(err) {
			return nil, notExist(key)
		}
		return nil, s.wrap("get", key, err)
	}
	return out.Body, nil
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	body, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, s.wrap("get", key, err)
	}
	return b, nil
}

func (s *s3Store) GetFile(ctx context.Context, key, p string) error {
	body, err := s.get(ctx, key)
	if err != nil {
		return err
	}
	defer body.Close()
	return writeLocal(p, body)
}

func (s *s3Store) Exists(ctx context.Context, key string) (bool, error) {
	k, err := s.key(key)
	if err != nil {
		return false, err
	}
	_, err = s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: k})
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	default:
		return false, s.wrap("head", key, err)
	}
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	if _, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: k}); err != nil && !isNotFound(err) {
		return s.wrap("delete", key, err)
	}
	return nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			k := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if k == "" || strings.HasSuffix(k, "/") {
				continue // a "directory" placeholder some tools create
			}
			out = append(out, Object{Key: k, Size: aws.ToInt64(o.Size)})
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (s *s3Store) AbortUploads(ctx context.Context, match func(key string) bool) (int, error) {
	n := 0
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix)}
	for {
		out, err := s.c.ListMultipartUploads(ctx, in)
		if err != nil {
			return n, s.wrap("list multipart uploads", "", err)
		}
		for _, up := range out.Uploads {
			if !match(strings.TrimPrefix(aws.ToString(up.Key), s.prefix)) {
				continue
			}
			_, err := s.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: up.Key, UploadId: up.UploadId})
			if err != nil && !isNoSuchUpload(err) {
				return n, s.wrap("abort multipart upload", path.Base(aws.ToString(up.Key)), err)
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

func isNoSuchUpload(err error) bool {
	var nsu *types.NoSuchUpload
	if errors.As(err, &nsu) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchUpload"
}

// errNoCredentials is Check's error when no credentials are found.
var errNoCredentials = errors.New("no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with a shared credentials file, or run where an instance role provides them")

// Check heads the bucket, then writes and deletes a probe object, and turns
// the usual failures into what to fix.
func (s *s3Store) Check(ctx context.Context) error {
	// Credentials first: without any, the SDK's chain ends at the
	// instance-metadata lookup, whose failure reads like a network error.
	if s.creds == nil {
		return fmt.Errorf("%s: %w", s.target, errNoCredentials)
	}
	if _, err := s.creds.Retrieve(ctx); err != nil {
		return fmt.Errorf("%s: %w (%w)", s.target, errNoCredentials, err)
	}
	_, err := s.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		probe := probeKey()
		if err = s.Put(ctx, probe, []byte("probe\n")); err == nil {
			err = s.Delete(ctx, probe)
		}
	}
	if err == nil {
		return nil
	}
	var re interface{ HTTPStatusCode() int }
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch {
	case status == http.StatusNotFound || code == "NoSuchBucket" || code == "NotFound":
		return fmt.Errorf("%s: bucket %q does not exist (create it first): %w", s.target, s.bucket, err)
	case status == http.StatusForbidden || status == http.StatusUnauthorized || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied":
		return fmt.Errorf("%s: access denied: check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and the bucket's policy: %w", s.target, err)
	case status == 0:
		return fmt.Errorf("%s: cannot reach the store (endpoint, network, region?): %w", s.target, err)
	default:
		return fmt.Errorf("%s: %w", s.target, err)
	}
}
