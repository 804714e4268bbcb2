package cli

import (
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/config"
)

// TestStandaloneFileMaxAge: standalone publishes files every minute on every
// target, S3 and HDFS included (on 1481bd2 only without --files: a user of
// `standalone --files s3://…` saw an empty bucket for 10 minutes), and a
// file_max_age the user set is kept.
func TestStandaloneFileMaxAge(t *testing.T) {
	for _, c := range []struct {
		files  string
		maxAge time.Duration
		want   time.Duration
	}{
		{"", config.DefaultFileMaxAge, time.Minute},
		{"s3://bucket/events?endpoint=http://127.0.0.1:9000", config.DefaultFileMaxAge, time.Minute},
		{"hdfs://namenode:8020/events", config.DefaultFileMaxAge, time.Minute},
		{"s3://bucket/events", 5 * time.Minute, 5 * time.Minute},
		{"", 30 * time.Second, 30 * time.Second},
	} {
		cfg := config.Default()
		cfg.Standalone.DataDir = t.TempDir()
		cfg.Sink.Files, cfg.Sink.FileMaxAge = c.files, c.maxAge
		standaloneDefaults(&cfg)
		if cfg.Sink.FileMaxAge != c.want {
			t.Errorf("--files %q, file_max_age %v: %v, want %v", c.files, c.maxAge, cfg.Sink.FileMaxAge, c.want)
		}
	}
}
