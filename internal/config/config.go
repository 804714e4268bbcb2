package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventlogging/eventlogging/internal/capsule"
	"github.com/eventlogging/eventlogging/internal/httpauth"
	"github.com/eventlogging/eventlogging/internal/lineformat"
	"github.com/eventlogging/eventlogging/internal/logging"
	"github.com/eventlogging/eventlogging/internal/yamlerr"
)

// DefaultRawFormat is the varnishkafka-style TSV layout of raw client-side
// records: url-encoded capsule, receiving host, sequence number, receive
// time, client IP, User-Agent.
const DefaultRawFormat = "%q %{recvFrom}s %{seqId}d %t %h %{userAgent}i"

// ServerSideFormat is the layout of the raw records servers produce
// straight into the server-side raw topic (capsule.TopicServerSide), as
// the PHP client's Kafka transport does: the original's server-side line
// "%{seqId}d EventLogging %j" followed by the producing host and the time
// the event was sent, which an Event Platform event (whose JSON may carry
// neither) needs for its uuid and dt. A processor configured with the
// original's format reads these lines too: text after a format's last
// specifier is ignored.
const ServerSideFormat = "%{seqId}d EventLogging %j %{recvFrom}s %t"

// Config is the whole configuration file.
type Config struct {
	Kafka      Kafka      `yaml:"kafka"`
	Process    Process    `yaml:"process"`
	Intake     Intake     `yaml:"intake"`
	Standalone Standalone `yaml:"standalone"`
	Registry   Registry   `yaml:"registry"`
	Sink       Sink       `yaml:"sink"`
	Metrics    Metrics    `yaml:"metrics"`
	Dashboard  Dashboard  `yaml:"dashboard"`
	Security   Security   `yaml:"security"`
	Log        Log        `yaml:"log"`
}

// Log configures logging.
type Log struct {
	// Level: debug, info (default), warn or error. Env
	// EVENTLOGGING_LOG_LEVEL. Long-running roles read it again on SIGHUP.
	Level string `yaml:"level"`
	// Format of the lines on stderr: text (key=value, the default) or
	// json (one object per line). Env EVENTLOGGING_LOG_FORMAT, which also
	// applies to the lines written before the file is read. Read at start.
	Format string `yaml:"format"`
	// RequestSample is the share of HTTP requests logged, one line each
	// (method, path, status, bytes, duration_ms; never the query or the
	// client address), from 0 (the default: none) to 1 (all). Env
	// EVENTLOGGING_LOG_REQUEST_SAMPLE.
	RequestSample float64 `yaml:"request_sample"`
}

// Security says who may use the admin routes of the HTTP services: the
// registry's writes (register, delete, PUT /config, PUT /mode), the
// dashboard (its pages, its API and its replay). A client is admitted when
// its address is in AdminNetworks, or when it sends the route's token
// (registry.write_token, dashboard.token) as "Authorization: Bearer
// <token>"; others get 403. The client address is the socket's peer, or
// the X-Forwarded-For client when the peer is in intake.trusted_proxies.
// Before that, the admin routes answer only the hosts of AllowedHosts
// (others get 421) and refuse cross-origin browser requests (403).
type Security struct {
	// AdminNetworks are addresses and CIDR prefixes of the clients admitted
	// without a token; default loopback (127.0.0.0/8, ::1). An empty list
	// admits no network: only the tokens. Env
	// EVENTLOGGING_SECURITY_ADMIN_NETWORKS (comma-separated; empty: none).
	AdminNetworks []string `yaml:"admin_networks"`
	// AllowedHosts are the host names (or host:port) the admin routes
	// answer in the Host header, against DNS rebinding; default localhost.
	// The host name of the role's listen address (and, for the registry,
	// of registry.self_url and registry.url) is added; an address
	// (127.0.0.1, [::1], 10.0.0.5:8090) always passes; "*" turns the check
	// off. Env EVENTLOGGING_SECURITY_ALLOWED_HOSTS (comma-separated).
	AllowedHosts []string `yaml:"allowed_hosts"`
}

// SlogLevel parses the level; "" is info.
func (l Log) SlogLevel() (slog.Level, error) {
	var v slog.Level
	if l.Level == "" {
		return slog.LevelInfo, nil
	}
	if err := v.UnmarshalText([]byte(l.Level)); err != nil {
		return v, fmt.Errorf("config: log.level: %q, want debug, info, warn or error", l.Level)
	}
	return v, nil
}

// Metrics configures the /metrics endpoint of roles without an HTTP
// listener of their own (process, sink); the intake, registry, dashboard
// and standalone serve /metrics on their listener.
type Metrics struct {
	// Listen is the address of /metrics of process and sink when their own
	// key (process.metrics_listen, sink.metrics_listen) is not set: the
	// fallback, for a file read by one role only. Default ":9101" for
	// process, ":9102" for sink; "off" disables it.
	Listen string `yaml:"listen"`
	// LagInterval is how often consumer lag is computed; default 15s.
	LagInterval time.Duration `yaml:"lag_interval"`
}

// Dashboard configures `eventlogging dashboard` (and the dashboard inside
// standalone, at /dashboard/).
type Dashboard struct {
	// Listen is the HTTP address of `eventlogging dashboard`.
	Listen string `yaml:"listen"`
	// Token admits a client outside security.admin_networks to the
	// dashboard (pages, API, replay) when sent as "Authorization: Bearer
	// <token>". Env EVENTLOGGING_DASHBOARD_TOKEN. Never logged.
	Token string `yaml:"token"`
	// ReplayToken is the former name of Token (it guarded the replay
	// only), still read. Env EVENTLOGGING_DASHBOARD_REPLAY_TOKEN.
	ReplayToken string `yaml:"replay_token"`
	// Health maps role names to URLs that answer 200 while the role is
	// healthy, e.g. intake: http://intake1:8080/readyz. The dashboard shows
	// each; `eventlogging status` expects each and exits 1 when one does
	// not answer 200. `dashboard --health` replaces it. Env
	// EVENTLOGGING_DASHBOARD_HEALTH=intake=http://…,registry=http://….
	Health map[string]string `yaml:"health"`
}

// AdminToken is the dashboard's token: token, else the former
// replay_token.
func (d Dashboard) AdminToken() string {
	if d.Token != "" {
		return d.Token
	}
	return d.ReplayToken
}

// Sink configures `eventlogging sink` (and the sinks inside standalone).
type Sink struct {
	// SQL is the database: "sqlite:PATH", "mysql:USER:PASS@tcp(HOST:PORT)/DB"
	// (go-sql-driver DSN) or "postgres://USER:PASS@HOST:PORT/DB"; empty: no
	// SQL sink.
	SQL string `yaml:"sql"`
	// TablePerSchema: one table per schema (columns added by compatible
	// revisions) instead of one per revision.
	TablePerSchema bool `yaml:"table_per_schema"`
	// Files is where the hour-partitioned files go; empty: no file sink.
	// A local directory (a path or file:///path), or a distributed store:
	// s3://BUCKET/PREFIX?endpoint=URL&region=R&use_path_style=true (any
	// S3-compatible store; credentials from the AWS environment variables,
	// shared config files or the instance role) or
	// hdfs://NAMENODE:PORT/PATH[?user=NAME].
	Files string `yaml:"files"`
	// FilesStaging is the local directory where files for a distributed
	// target are written before they are uploaded; default a directory
	// named after the target in the system's temp directory.
	FilesStaging string `yaml:"files_staging"`
	// Format of the files: parquet or jsonl.gz.
	Format string `yaml:"format"`
	// Topics is a regular expression of the topics to store.
	Topics string `yaml:"topics"`
	// Group prefixes the sinks' consumer groups: <group>-sql, <group>-files.
	Group string `yaml:"group"`
	// ErrorTopic receives records a sink can never write.
	ErrorTopic string `yaml:"error_topic"`
	// BatchSize and BatchTime bound a batch.
	BatchSize int           `yaml:"batch_size"`
	BatchTime time.Duration `yaml:"batch_time"`
	// DedupeWindow: the file and Iceberg sinks drop a record whose uuid is
	// in the last this many records of its partition (an event produced
	// twice: a batch processed again after a crash, a synchronous POST
	// spooled after an ambiguous produce); each assignment rereads as
	// many records. Memory: about 50 bytes per record of the window per
	// assigned partition. 0: off.
	DedupeWindow int `yaml:"dedupe_window"`
	// FileMaxAge publishes open files after this long; Lateness closes
	// hours (writes _SUCCESS) this long after they end.
	FileMaxAge time.Duration `yaml:"file_max_age"`
	Lateness   time.Duration `yaml:"lateness"`
	// IcebergCatalog is the Iceberg sink's catalog: a SQL catalog,
	// sqlite:///PATH or postgresql://USER:PASS@HOST:PORT/DB, or a REST
	// catalog, http(s)://HOST/PATH (credentials: docs/iceberg.md); empty:
	// no Iceberg sink.
	IcebergCatalog string `yaml:"iceberg_catalog"`
	// IcebergWarehouse is where the tables' data and metadata files go: a
	// local path, file:///PATH, or s3://BUCKET/PREFIX?endpoint=…&region=…&use_path_style=true
	// (credentials from the AWS environment, as for sink.files).
	IcebergWarehouse string `yaml:"iceberg_warehouse"`
	// IcebergCommitInterval: the Iceberg sink commits at most this often
	// (each commit is a snapshot readers see).
	IcebergCommitInterval time.Duration `yaml:"iceberg_commit_interval"`
	// IcebergNamespace holds the tables (<namespace>.<Schema>); default
	// "eventlogging".
	IcebergNamespace string `yaml:"iceberg_namespace"`
	// IcebergCatalogName is the catalog_name a SQL catalog's rows carry;
	// default "eventlogging".
	IcebergCatalogName string `yaml:"iceberg_catalog_name"`
	// IcebergCompactEvery compacts the tables' finished hours after this
	// many commits (60: hourly with a 1-minute interval); 0: the default,
	// negative: never.
	IcebergCompactEvery int `yaml:"iceberg_compact_every"`
	// IcebergSnapshotRetention expires snapshots older than this after
	// each compaction (time travel reaches this far back); 0: the default
	// (7 days), negative: never.
	IcebergSnapshotRetention time.Duration `yaml:"iceberg_snapshot_retention"`
	// MetricsListen is the address of /metrics of `eventlogging sink`
	// (--metrics-listen); empty: metrics.listen, else ":9102"; "off"
	// disables it.
	MetricsListen string `yaml:"metrics_listen"`
}

// Registry configures the schema registry and how other roles reach it.
type Registry struct {
	// URL is where processors and intakes resolve schemas, e.g.
	// http://registry:8081; empty: they read process.schemas_dir directly.
	URL string `yaml:"url"`
	// Listen is the HTTP address of `eventlogging registry`.
	Listen string `yaml:"listen"`
	// SelfURL is how other registry instances reach this one (writes are
	// forwarded to the leader); default http://<listen address>.
	SelfURL string `yaml:"self_url"`
	// Topic is the compacted topic holding the registry's state.
	Topic string `yaml:"topic"`
	// WriteToken admits a write from a client outside
	// security.admin_networks when sent as "Authorization: Bearer <token>";
	// registry instances also send it on the writes they forward to the
	// leader. Env EVENTLOGGING_REGISTRY_WRITE_TOKEN. Never logged.
	WriteToken string `yaml:"write_token"`
	// Token is the former name of WriteToken, still read. Env
	// EVENTLOGGING_REGISTRY_TOKEN (which `eventlogging schema push` also
	// reads).
	Token string `yaml:"token"`
	// DefaultCompatibility until PUT /config sets one.
	DefaultCompatibility string `yaml:"default_compatibility"`
	// ImportDir is a schema folder registered at start (idempotent).
	ImportDir string `yaml:"import_dir"`

	// Limits on compiling a schema (a JSON Schema compiled, an Avro schema
	// parsed) in the registry's lookup, compatibility and register
	// requests, and in the schema resolution of processors and intakes
	// (which read this section too); 0 selects the default. A schema over
	// a limit is invalid: the registry answers 422 with error_code 42201
	// and a message naming the key, e.g. "Invalid schema: schema has 4000
	// patterns, the limit is 1000 (registry.max_schema_patterns)".

	// MaxSchemaBytes bounds the text of a schema; default 1048576 (1 MiB).
	MaxSchemaBytes int `yaml:"max_schema_bytes"`
	// MaxSchemaPatterns bounds the regular expressions of a schema
	// ("pattern" values, "patternProperties" names); default 1000.
	MaxSchemaPatterns int `yaml:"max_schema_patterns"`
	// MaxPatternBytes bounds the length of one pattern; default 1000.
	MaxPatternBytes int `yaml:"max_pattern_bytes"`
	// MaxPatternProgram bounds the compiled program of one pattern, in
	// regexp instructions, which is what compiling it costs: a counted
	// repetition x{n,m} copies x m times (^[a-z]{1,255}$ is 513
	// instructions, ^(a|b){1,1000}$ over 4,000); default 1000.
	MaxPatternProgram int `yaml:"max_pattern_program"`
	// CompileTimeout bounds the compile of one schema; default 5s.
	CompileTimeout time.Duration `yaml:"compile_timeout"`
	// MaxConcurrentCompiles is how many schemas a role compiles at once;
	// default 2.
	MaxConcurrentCompiles int `yaml:"max_concurrent_compiles"`
	// CompileWait bounds how long a compile waits for its turn; past it
	// the registry answers 503 (error_code 50301, Retry-After: 1), and a
	// processor or intake fails the event as it does when a schema fetch
	// times out (a processor EventError, which can be replayed). Default
	// 5s.
	CompileWait time.Duration `yaml:"compile_wait"`
}

// AdminToken is the registry's write token: write_token, else the former
// token.
func (r Registry) AdminToken() string {
	if r.WriteToken != "" {
		return r.WriteToken
	}
	return r.Token
}

// Values of Intake.Ack.
const (
	AckBuffered = "buffered"
	AckKafka    = "kafka"
)

// Intake configures `eventlogging intake` (and the intake inside standalone).
type Intake struct {
	// Listen is the HTTP address.
	Listen string `yaml:"listen"`
	// RawTopic receives beacons and hasty POSTs.
	RawTopic string `yaml:"raw_topic"`
	// RecvFrom names this intake in raw records; default host:pid.
	RecvFrom       string   `yaml:"recv_from"`
	MaxURLLength   int      `yaml:"max_url_length"`
	MaxBodyBytes   int64    `yaml:"max_body_bytes"`
	MaxBatchEvents int      `yaml:"max_batch_events"`
	CORSOrigin     string   `yaml:"cors_origin"`
	TrustedProxies []string `yaml:"trusted_proxies"`
	// SpoolDir holds events while Kafka is unreachable.
	SpoolDir      string `yaml:"spool_dir"`
	SpoolMaxBytes int64  `yaml:"spool_max_bytes"`
	// BufferRecords bounds the producer's in-memory buffer (beacons and
	// hasty POSTs answered before Kafka acknowledged them).
	BufferRecords   int           `yaml:"buffer_records"`
	DeliveryTimeout time.Duration `yaml:"delivery_timeout"`
	// SyncLinger is how long the intake's synchronous producer (synchronous
	// POSTs, beacons and hasty POSTs with Ack "kafka", the spool's replay)
	// waits for other requests' records before it sends a batch: a little
	// gathers the records of concurrent requests into fewer produce
	// requests (kafka.linger, 5 ms, is for the asynchronous produces).
	// 0: none.
	SyncLinger time.Duration `yaml:"sync_linger"`
	// Ack is when beacons and hasty POSTs are answered: "buffered" (the
	// default) once the record is in the producer buffer (or the spool);
	// "kafka" once Kafka acknowledged it with acks=all (or it is fsync'd
	// in the spool), so that an intake crash loses no answered event, at
	// the cost of a produce round trip of latency per request.
	Ack string `yaml:"ack"`
	// CanaryInterval: every interval the intake sends each CanaryEvents
	// event through the raw path, marked as a canary (webHost or
	// meta.domain "canary"); sinks record when they see it
	// (eventlogging_canary_last_seen_timestamp_seconds) and do not store
	// it. 0 disables canaries.
	CanaryInterval time.Duration `yaml:"canary_interval"`
	// CanaryEvents are valid events, one per stream to watch: legacy
	// capsules ({schema, revision, event}) or Event Platform events.
	CanaryEvents []map[string]any `yaml:"canary_events"`
}

// Standalone configures `eventlogging standalone`.
type Standalone struct {
	// DataDir holds the embedded broker's log, the spool and the sinks.
	DataDir string `yaml:"data_dir"`
	// KafkaListen is the embedded broker's address (for `tail` and other
	// Kafka clients).
	KafkaListen string `yaml:"kafka_listen"`
	// Retention of every topic of the embedded broker.
	Retention time.Duration `yaml:"retention"`
}

// Kafka is how every role reaches the cluster.
type Kafka struct {
	// Brokers: bootstrap addresses. Env EVENTLOGGING_KAFKA_BROKERS (comma-separated).
	Brokers []string `yaml:"brokers"`
	// ClientID names the clients in broker logs.
	ClientID string `yaml:"client_id"`
	// Partitions of topics the pipeline creates.
	Partitions int32 `yaml:"partitions"`
	// ReplicationFactor of topics the pipeline creates (-1: broker default).
	ReplicationFactor int16 `yaml:"replication_factor"`
	// Linger of the producers' asynchronous produces (the intake's synchronous
	// produces linger Intake.SyncLinger: a waiting client waits it out).
	Linger time.Duration `yaml:"linger"`
	// SessionTimeout of consumer group members.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// FetchMaxBytes bounds one fetch response of a consumer (processor,
	// sinks) and so, with max_poll_records, its memory.
	FetchMaxBytes int32 `yaml:"fetch_max_bytes"`
	// FetchMinBytes and FetchMaxWait: a fetch of the processor's and the
	// sinks' consumers is answered once it has this many bytes, or after
	// fetch_max_wait. Waiting for a few hundred KiB lets a busy broker
	// answer one fetch where it would answer one per produce; it delays a
	// quiet topic's records by up to fetch_max_wait.
	FetchMinBytes int32         `yaml:"fetch_min_bytes"`
	FetchMaxWait  time.Duration `yaml:"fetch_max_wait"`

	// TLS encrypts the connections to the brokers (the brokers' SSL or
	// SASL_SSL listener). Env EVENTLOGGING_KAFKA_TLS=true.
	TLS bool `yaml:"tls"`
	// TLSCAFile is a PEM bundle of the CAs that sign the brokers'
	// certificates; empty: the system's roots. Needs tls.
	TLSCAFile string `yaml:"tls_ca_file"`
	// TLSCertFile and TLSKeyFile are a PEM client certificate and key for
	// brokers that require mutual TLS (ssl.client.auth=required); both or
	// neither. Need tls.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// TLSServerName is checked against the brokers' certificates; empty:
	// the host of each broker address. Needs tls.
	TLSServerName string `yaml:"tls_server_name"`
	// TLSInsecureSkipVerify accepts any broker certificate: for tests only.
	// Needs tls.
	TLSInsecureSkipVerify bool `yaml:"tls_insecure_skip_verify"`
	// SASLMechanism authenticates the clients: PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512 (any case); empty: no SASL. PLAIN sends the password as it is:
	// use it with tls only.
	SASLMechanism string `yaml:"sasl_mechanism"`
	// SASLUsername and SASLPassword are the credentials; both required
	// with a mechanism. Set the password through the environment
	// (EVENTLOGGING_KAFKA_SASL_PASSWORD) rather than the file; it is
	// never logged and check-config prints it as ***.
	SASLUsername string `yaml:"sasl_username"`
	SASLPassword string `yaml:"sasl_password"`
}

// Input is one raw topic and its line format.
type Input struct {
	Topic  string `yaml:"topic"`
	Format string `yaml:"format"`
}

// Process configures `eventlogging process`.
type Process struct {
	Group                    string        `yaml:"group"`
	Inputs                   []Input       `yaml:"inputs"`
	SchemasDir               string        `yaml:"schemas_dir"`
	StreamsFile              string        `yaml:"streams_file"`
	IP                       string        `yaml:"ip"`
	IPHashAlg                string        `yaml:"ip_hash_alg"`
	IPKeyTopic               string        `yaml:"ip_key_topic"`
	IPKeyPeriod              time.Duration `yaml:"ip_key_period"`
	TrustClientCapsuleFields bool          `yaml:"trust_client_capsule_fields"`
	TopicTemplate            string        `yaml:"topic_template"`
	MixedTopic               string        `yaml:"mixed_topic"`
	MixedExclude             string        `yaml:"mixed_exclude"`
	ErrorTopic               string        `yaml:"error_topic"`
	NegativeCacheTTL         time.Duration `yaml:"negative_cache_ttl"`
	MaxPollRecords           int           `yaml:"max_poll_records"`
	ProcessorID              string        `yaml:"processor_id"`
	Parallelism              int           `yaml:"parallelism"`
	// MetricsListen is the address of /metrics of `eventlogging process`
	// (--metrics-listen); empty: metrics.listen, else ":9101"; "off"
	// disables it.
	MetricsListen string `yaml:"metrics_listen"`
}

// ProcessMetricsListen is the /metrics address of `eventlogging process`:
// process.metrics_listen, else metrics.listen; "" means the role's default
// (:9101), "off" none.
func (c *Config) ProcessMetricsListen() string {
	return cmpOr(c.Process.MetricsListen, c.Metrics.Listen)
}

// SinkMetricsListen is the /metrics address of `eventlogging sink`:
// sink.metrics_listen, else metrics.listen; "" means the role's default
// (:9102), "off" none.
func (c *Config) SinkMetricsListen() string {
	return cmpOr(c.Sink.MetricsListen, c.Metrics.Listen)
}

// ProcessInputs is the raw topics the processors read: process.inputs,
// and, while process.inputs is the default (the client-side topic in
// DefaultRawFormat alone: not set in the file, or set to just that, and
// not replaced by --raw-topic or --format), also the server-side raw
// topic in ServerSideFormat, where servers produce (clients/php's Kafka
// transport).
func (c *Config) ProcessInputs() []Input {
	in := c.Process.Inputs
	if !slices.Equal(in, Default().Process.Inputs) {
		return in
	}
	return append(slices.Clip(in), Input{Topic: capsule.TopicServerSide, Format: ServerSideFormat})
}

// cmpOr returns the first non-empty string.
func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// DefaultFileMaxAge is sink.file_max_age's default (standalone's is
// StandaloneFileMaxAge).
const DefaultFileMaxAge = 10 * time.Minute

// StandaloneFileMaxAge is sink.file_max_age in standalone unless set: a
// user trying it sees files within a minute, whatever the target.
const StandaloneFileMaxAge = time.Minute

// Default returns the configuration used when a key is not set.
func Default() Config {
	return Config{
		Kafka: Kafka{
			Brokers:           []string{"127.0.0.1:9092"},
			ClientID:          "eventlogging",
			Partitions:        6,
			ReplicationFactor: -1,
			Linger:            5 * time.Millisecond,
			FetchMaxBytes:     16 << 20,
			FetchMinBytes:     256 << 10,
			FetchMaxWait:      100 * time.Millisecond,
			SessionTimeout:    10 * time.Second,
		},
		Intake: Intake{
			Listen:          ":8080",
			RawTopic:        capsule.TopicClientSide,
			MaxURLLength:    2000,
			MaxBodyBytes:    4 << 20,
			MaxBatchEvents:  1000,
			CORSOrigin:      "*",
			SpoolDir:        "spool",
			SpoolMaxBytes:   1 << 30,
			BufferRecords:   100_000,
			Ack:             AckBuffered,
			DeliveryTimeout: 15 * time.Second,
			SyncLinger:      100 * time.Microsecond,
		},
		Registry: Registry{
			Listen:               ":8081",
			Topic:                "_eventlogging_schemas",
			DefaultCompatibility: "BACKWARD",
		},
		Sink: Sink{
			Format:                "parquet",
			Topics:                "^eventlogging_.+",
			Group:                 "eventlogging-sink",
			ErrorTopic:            "eventlogging_SinkError",
			BatchSize:             1000,
			BatchTime:             5 * time.Second,
			DedupeWindow:          20_000,
			FileMaxAge:            DefaultFileMaxAge,
			IcebergCommitInterval: time.Minute,
			IcebergNamespace:      "eventlogging",
			IcebergCatalogName:    "eventlogging",
			Lateness:              time.Hour,
		},
		Metrics:   Metrics{LagInterval: 15 * time.Second},
		Dashboard: Dashboard{Listen: ":8090"},
		Security:  Security{AdminNetworks: []string{"127.0.0.0/8", "::1"}, AllowedHosts: []string{"localhost"}},
		Standalone: Standalone{
			DataDir:     "data",
			KafkaListen: "127.0.0.1:19092",
			Retention:   7 * 24 * time.Hour,
		},
		Process: Process{
			Group:            "eventlogging-processor",
			Inputs:           []Input{{Topic: capsule.TopicClientSide, Format: DefaultRawFormat}},
			SchemasDir:       "schemas",
			IP:               "hash",
			IPHashAlg:        "sha256",
			IPKeyTopic:       "eventlogging_ip_key",
			IPKeyPeriod:      90 * 24 * time.Hour,
			TopicTemplate:    capsule.DefaultTopicTmpl,
			MixedTopic:       capsule.TopicValidMixed,
			ErrorTopic:       capsule.TopicEventError,
			NegativeCacheTTL: 30 * time.Second,
			MaxPollRecords:   20_000,
		},
	}
}

// Load reads path (if not empty) over the defaults, then applies environment
// overrides, then validates.
func Load(path string) (Config, error) {
	c := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("config: %w", err)
		}
		if err := decodeStrict(path, data, &c); err != nil {
			return c, err
		}
		c.resolvePaths(filepath.Dir(path))
	}
	if err := applyEnv(&c, os.LookupEnv); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Parse decodes YAML over the defaults and validates (no environment).
func Parse(data []byte) (Config, error) {
	c := Default()
	if err := decodeStrict("", data, &c); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

// FileKeys are the keys naming files or folders the configuration reads:
// a relative path in a configuration file is relative to that file's
// folder (not to the current directory), and check-config checks that
// each exists. (State folders, standalone.data_dir, intake.spool_dir and
// sink.files_staging, stay relative to the current directory, where
// they are made.)
func (c *Config) FileKeys() []FileKey {
	return []FileKey{
		{"process.schemas_dir", &c.Process.SchemasDir, true},
		{"process.streams_file", &c.Process.StreamsFile, false},
		{"registry.import_dir", &c.Registry.ImportDir, true},
		{"kafka.tls_ca_file", &c.Kafka.TLSCAFile, false},
		{"kafka.tls_cert_file", &c.Kafka.TLSCertFile, false},
		{"kafka.tls_key_file", &c.Kafka.TLSKeyFile, false},
	}
}

// FileKey is one key naming a file (or a folder, Dir) the configuration
// reads; Path points at its value.
type FileKey struct {
	Key  string
	Path *string
	Dir  bool
}

// resolvePaths makes the relative paths of FileKeys that the file set
// (they differ from the defaults) relative to dir, the file's folder.
func (c *Config) resolvePaths(dir string) {
	def := Default()
	defs := def.FileKeys()
	for i, f := range c.FileKeys() {
		v := *f.Path
		if v == "" || filepath.IsAbs(v) || v == *defs[i].Path {
			continue
		}
		*f.Path = filepath.Join(dir, v)
	}
}

// decodeStrict decodes data (the file named file) over c, refusing unknown
// keys; an empty file leaves the defaults. Errors name the file, line and
// column and the key as written (yamlerr).
func decodeStrict(file string, data []byte, c *Config) error {
	return yamlerr.Decode(file, data, c)
}

var validGroup = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// validIdent is an Iceberg namespace the engines take unquoted.
var validIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Validate reports the first problem with the configuration, naming the key.
func (c *Config) Validate() error {
	if _, err := c.Log.SlogLevel(); err != nil {
		return err
	}
	if _, err := logging.ParseFormat(c.Log.Format); err != nil {
		return fmt.Errorf("config: log.format: %q, want text or json", c.Log.Format)
	}
	if s := c.Log.RequestSample; !(s >= 0 && s <= 1) {
		return fmt.Errorf("config: log.request_sample: %v, want a share from 0 (no request logged) to 1 (every request)", s)
	}
	if err := c.validateAdmin(); err != nil {
		return err
	}
	if err := validateFilesTarget(c.Sink.Files); err != nil {
		return err
	}
	if (c.Sink.IcebergCatalog == "") != (c.Sink.IcebergWarehouse == "") {
		return errors.New("config: sink.iceberg_catalog and sink.iceberg_warehouse go together: set both (or neither)")
	}
	if c.Sink.IcebergCatalog != "" && c.Sink.IcebergCommitInterval <= 0 {
		return fmt.Errorf("config: sink.iceberg_commit_interval: %v, want a positive duration", c.Sink.IcebergCommitInterval)
	}
	if !validIdent.MatchString(c.Sink.IcebergNamespace) {
		return fmt.Errorf("config: sink.iceberg_namespace: %q, want letters, digits and _ (e.g. eventlogging)", c.Sink.IcebergNamespace)
	}
	if c.Sink.IcebergCatalogName == "" {
		return errors.New("config: sink.iceberg_catalog_name: empty, want a name (default eventlogging)")
	}
	if len(c.Kafka.Brokers) == 0 {
		return errors.New("config: kafka.brokers: at least one broker address is required")
	}
	for _, b := range c.Kafka.Brokers {
		if !strings.Contains(b, ":") {
			return fmt.Errorf("config: kafka.brokers: %q is not host:port", b)
		}
	}
	if c.Kafka.FetchMaxBytes < 1<<20 {
		return fmt.Errorf("config: kafka.fetch_max_bytes: %d, want at least 1 MiB (1048576)", c.Kafka.FetchMaxBytes)
	}
	if c.Kafka.FetchMinBytes < 1 || c.Kafka.FetchMinBytes > c.Kafka.FetchMaxBytes {
		return fmt.Errorf("config: kafka.fetch_min_bytes: %d, want 1 to kafka.fetch_max_bytes (%d)", c.Kafka.FetchMinBytes, c.Kafka.FetchMaxBytes)
	}
	if c.Kafka.FetchMaxWait < time.Millisecond || c.Kafka.FetchMaxWait > 30*time.Second {
		return fmt.Errorf("config: kafka.fetch_max_wait: %s, want 1ms to 30s", c.Kafka.FetchMaxWait)
	}
	if c.Kafka.Partitions < 1 {
		return fmt.Errorf("config: kafka.partitions: %d, want at least 1", c.Kafka.Partitions)
	}
	if c.Kafka.ReplicationFactor == 0 || c.Kafka.ReplicationFactor < -1 {
		return fmt.Errorf("config: kafka.replication_factor: %d, want -1 (broker default) or at least 1", c.Kafka.ReplicationFactor)
	}
	if err := c.Kafka.validateSecurity(); err != nil {
		return err
	}
	p := &c.Process
	if !validGroup.MatchString(p.Group) {
		return fmt.Errorf("config: process.group: %q is not a valid consumer group name", p.Group)
	}
	if len(p.Inputs) == 0 {
		return errors.New("config: process.inputs: at least one raw topic is required")
	}
	for i, in := range p.Inputs {
		if !capsule.ValidTopicName(in.Topic) {
			return fmt.Errorf("config: process.inputs[%d].topic: %q is not a valid topic name", i, in.Topic)
		}
		if _, err := lineformat.Compile(in.Format); err != nil {
			return fmt.Errorf("config: process.inputs[%d].format: %w", i, err)
		}
	}
	switch p.IP {
	case "hash", "drop", "keep":
	default:
		return fmt.Errorf("config: process.ip: %q, want hash, drop or keep", p.IP)
	}
	switch p.IPHashAlg {
	case "sha256", "sha1":
	default:
		return fmt.Errorf("config: process.ip_hash_alg: %q, want sha256 or sha1", p.IPHashAlg)
	}
	if p.IPKeyPeriod < time.Hour {
		return fmt.Errorf("config: process.ip_key_period: %s, want at least 1h", p.IPKeyPeriod)
	}
	if _, err := capsule.ParseTopicTemplate(p.TopicTemplate); err != nil {
		return fmt.Errorf("config: process.topic_template: %w", err)
	}
	if p.MixedTopic != "-" && !capsule.ValidTopicName(p.MixedTopic) {
		return fmt.Errorf("config: process.mixed_topic: %q is not a valid topic name (\"-\" disables it)", p.MixedTopic)
	}
	if p.MixedExclude != "" {
		if _, err := regexp.Compile(p.MixedExclude); err != nil {
			return fmt.Errorf("config: process.mixed_exclude: %w", err)
		}
	}
	if !capsule.ValidTopicName(p.ErrorTopic) {
		return fmt.Errorf("config: process.error_topic: %q is not a valid topic name", p.ErrorTopic)
	}
	if !capsule.ValidTopicName(p.IPKeyTopic) {
		return fmt.Errorf("config: process.ip_key_topic: %q is not a valid topic name", p.IPKeyTopic)
	}
	return c.validateIntake()
}

func (c *Config) validateIntake() error {
	in := &c.Intake
	if _, _, err := net.SplitHostPort(in.Listen); err != nil {
		return fmt.Errorf("config: intake.listen: %q: %w", in.Listen, err)
	}
	if !capsule.ValidTopicName(in.RawTopic) {
		return fmt.Errorf("config: intake.raw_topic: %q is not a valid topic name", in.RawTopic)
	}
	if in.MaxURLLength < 100 {
		return fmt.Errorf("config: intake.max_url_length: %d, want at least 100", in.MaxURLLength)
	}
	if in.MaxBodyBytes < 1024 {
		return fmt.Errorf("config: intake.max_body_bytes: %d, want at least 1024", in.MaxBodyBytes)
	}
	if in.MaxBatchEvents < 1 {
		return fmt.Errorf("config: intake.max_batch_events: %d, want at least 1", in.MaxBatchEvents)
	}
	for _, p := range in.TrustedProxies {
		if !validPrefix(p) {
			return fmt.Errorf("config: intake.trusted_proxies: %q is not an address or CIDR prefix", p)
		}
	}
	if in.SpoolDir == "" {
		return errors.New("config: intake.spool_dir: required")
	}
	if in.SpoolMaxBytes < 1<<20 {
		return fmt.Errorf("config: intake.spool_max_bytes: %d, want at least 1 MiB", in.SpoolMaxBytes)
	}
	if in.Ack != AckBuffered && in.Ack != AckKafka {
		return fmt.Errorf("config: intake.ack: %q, want %q or %q", in.Ack, AckBuffered, AckKafka)
	}
	if in.BufferRecords < 1 {
		return fmt.Errorf("config: intake.buffer_records: %d, want at least 1", in.BufferRecords)
	}
	if in.DeliveryTimeout < time.Second {
		return fmt.Errorf("config: intake.delivery_timeout: %s, want at least 1s", in.DeliveryTimeout)
	}
	if in.SyncLinger < 0 || in.SyncLinger > 100*time.Millisecond {
		return fmt.Errorf("config: intake.sync_linger: %s, want 0 (none) to 100ms: every synchronous POST waits it out", in.SyncLinger)
	}
	if in.CanaryInterval < 0 || (in.CanaryInterval > 0 && in.CanaryInterval < time.Second) {
		return fmt.Errorf("config: intake.canary_interval: %s, want 0 (off) or at least 1s", in.CanaryInterval)
	}
	for i, ev := range in.CanaryEvents {
		_, legacy := ev["schema"]
		_, platform := ev["$schema"]
		if !legacy && !platform {
			return fmt.Errorf("config: intake.canary_events[%d]: want a legacy capsule (schema, revision, event) or an Event Platform event ($schema, meta.stream)", i)
		}
	}
	for _, k := range []struct{ key, addr string }{
		{"metrics.listen", c.Metrics.Listen},
		{"process.metrics_listen", c.Process.MetricsListen},
		{"sink.metrics_listen", c.Sink.MetricsListen},
	} {
		if m := k.addr; m != "" && m != "off" {
			if _, _, err := net.SplitHostPort(m); err != nil {
				return fmt.Errorf("config: %s: %q: %w", k.key, m, err)
			}
		}
	}
	if c.Metrics.LagInterval < time.Second {
		return fmt.Errorf("config: metrics.lag_interval: %s, want at least 1s", c.Metrics.LagInterval)
	}
	if _, _, err := net.SplitHostPort(c.Dashboard.Listen); err != nil {
		return fmt.Errorf("config: dashboard.listen: %q: %w", c.Dashboard.Listen, err)
	}
	if err := validateHealth(c.Dashboard.Health); err != nil {
		return err
	}
	r := &c.Registry
	if r.URL != "" && !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://") {
		return fmt.Errorf("config: registry.url: %q is not an http(s) URL", r.URL)
	}
	if _, _, err := net.SplitHostPort(r.Listen); err != nil {
		return fmt.Errorf("config: registry.listen: %q: %w", r.Listen, err)
	}
	if !capsule.ValidTopicName(r.Topic) {
		return fmt.Errorf("config: registry.topic: %q is not a valid topic name", r.Topic)
	}
	for _, l := range []struct {
		key string
		v   int64
	}{
		{"max_schema_bytes", int64(r.MaxSchemaBytes)}, {"max_schema_patterns", int64(r.MaxSchemaPatterns)},
		{"max_pattern_bytes", int64(r.MaxPatternBytes)}, {"max_pattern_program", int64(r.MaxPatternProgram)},
		{"compile_timeout", int64(r.CompileTimeout)}, {"max_concurrent_compiles", int64(r.MaxConcurrentCompiles)},
		{"compile_wait", int64(r.CompileWait)},
	} {
		if l.v < 0 {
			return fmt.Errorf("config: registry.%s: negative, want 0 (the default) or more", l.key)
		}
	}
	switch strings.ToUpper(r.DefaultCompatibility) {
	case "NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE":
	default:
		return fmt.Errorf("config: registry.default_compatibility: %q, want NONE, BACKWARD, FORWARD, FULL or a _TRANSITIVE form", r.DefaultCompatibility)
	}
	sk := &c.Sink
	if sk.SQL != "" && !strings.HasPrefix(sk.SQL, "sqlite:") && !strings.HasPrefix(sk.SQL, "mysql:") && !strings.HasPrefix(sk.SQL, "postgres://") && !strings.HasPrefix(sk.SQL, "postgresql://") {
		return fmt.Errorf("config: sink.sql: %q: want sqlite:PATH, mysql:DSN or postgres://…", redactDSN(sk.SQL))
	}
	if sk.Format != "parquet" && sk.Format != "jsonl.gz" {
		return fmt.Errorf("config: sink.format: %q, want parquet or jsonl.gz", sk.Format)
	}
	if _, err := regexp.Compile(sk.Topics); err != nil {
		return fmt.Errorf("config: sink.topics: %w", err)
	}
	if !capsule.ValidTopicName(sk.ErrorTopic) {
		return fmt.Errorf("config: sink.error_topic: %q is not a valid topic name", sk.ErrorTopic)
	}
	if sk.DedupeWindow < 0 || sk.DedupeWindow > 10_000_000 {
		return fmt.Errorf("config: sink.dedupe_window: %d, want 0 (off) to 10000000 records", sk.DedupeWindow)
	}
	if sk.BatchSize < 1 || sk.BatchTime < 10*time.Millisecond {
		return fmt.Errorf("config: sink.batch_size %d / batch_time %s: want at least 1 and 10ms", sk.BatchSize, sk.BatchTime)
	}
	st := &c.Standalone
	if st.DataDir == "" {
		return errors.New("config: standalone.data_dir: required")
	}
	if _, _, err := net.SplitHostPort(st.KafkaListen); err != nil {
		return fmt.Errorf("config: standalone.kafka_listen: %q: %w", st.KafkaListen, err)
	}
	if st.Retention < time.Hour {
		return fmt.Errorf("config: standalone.retention: %s, want at least 1h", st.Retention)
	}
	return nil
}

var validRole = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,64}$`)

// validateHealth checks dashboard.health: role names, and an http(s) URL
// with a host for each, reported in role order.
func validateHealth(h map[string]string) error {
	roles := slices.Sorted(maps.Keys(h))
	for _, role := range roles {
		if !validRole.MatchString(role) {
			return fmt.Errorf("config: dashboard.health: role %q: want letters, digits, '.', '_' or '-' (e.g. intake, intake-2)", role)
		}
		u, err := url.Parse(h[role])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: dashboard.health: %s: %q is not an http(s) URL (e.g. http://intake1:8080/readyz)", role, h[role])
		}
	}
	return nil
}

// ParseHealth reads role health targets written ROLE=URL,ROLE=URL (the
// form of EVENTLOGGING_DASHBOARD_HEALTH and `dashboard --health`); empty
// entries are skipped, an empty string gives nil.
func ParseHealth(s string) (map[string]string, error) {
	var out map[string]string
	for kv := range strings.SplitSeq(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		role, u, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(role) == "" || strings.TrimSpace(u) == "" {
			return nil, fmt.Errorf("%q: want ROLE=URL", kv)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.TrimSpace(role)] = strings.TrimSpace(u)
	}
	return out, nil
}

// validateAdmin checks the admin networks and the tokens' former names.
// Errors never hold a token.
func (c *Config) validateAdmin() error {
	for _, n := range c.Security.AdminNetworks {
		if !validPrefix(n) {
			return fmt.Errorf("config: security.admin_networks: %q is not an address or CIDR prefix (e.g. 10.0.0.0/8, 192.0.2.7, ::1)", n)
		}
	}
	if _, err := httpauth.ParseHosts(c.Security.AllowedHosts); err != nil {
		return fmt.Errorf("config: security.allowed_hosts: %w", err)
	}
	if r := c.Registry; r.Token != "" && r.WriteToken != "" && r.Token != r.WriteToken {
		return errors.New("config: registry.token: the former name of registry.write_token, set to another value than it (EVENTLOGGING_REGISTRY_TOKEN, EVENTLOGGING_REGISTRY_WRITE_TOKEN): keep registry.write_token only")
	}
	if d := c.Dashboard; d.ReplayToken != "" && d.Token != "" && d.ReplayToken != d.Token {
		return errors.New("config: dashboard.replay_token: the former name of dashboard.token, set to another value than it (EVENTLOGGING_DASHBOARD_REPLAY_TOKEN, EVENTLOGGING_DASHBOARD_TOKEN): keep dashboard.token only")
	}
	return nil
}

// validPrefix reports whether s is an address or a CIDR prefix.
func validPrefix(s string) bool {
	s = strings.TrimSpace(s)
	if _, err := netip.ParsePrefix(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// SASL mechanisms kafka.sasl_mechanism accepts.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// validateSecurity checks the TLS and SASL keys. Errors name the key and
// never hold the password.
func (k *Kafka) validateSecurity() error {
	tlsFiles := []struct{ key, path string }{
		{"kafka.tls_ca_file", k.TLSCAFile},
		{"kafka.tls_cert_file", k.TLSCertFile},
		{"kafka.tls_key_file", k.TLSKeyFile},
	}
	if !k.TLS {
		for _, f := range tlsFiles {
			if f.path != "" {
				return fmt.Errorf("config: %s: set kafka.tls: true to use it (connections are plaintext without it)", f.key)
			}
		}
		if k.TLSServerName != "" {
			return errors.New("config: kafka.tls_server_name: set kafka.tls: true to use it (connections are plaintext without it)")
		}
		if k.TLSInsecureSkipVerify {
			return errors.New("config: kafka.tls_insecure_skip_verify: set kafka.tls: true to use it (connections are plaintext without it)")
		}
	}
	if (k.TLSCertFile == "") != (k.TLSKeyFile == "") {
		return errors.New("config: kafka.tls_cert_file, kafka.tls_key_file: a client certificate needs both")
	}
	for _, f := range tlsFiles {
		if f.path == "" {
			continue
		}
		st, err := os.Stat(f.path)
		if err != nil {
			return fmt.Errorf("config: %s: %w", f.key, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("config: %s: %s is not a regular file", f.key, f.path)
		}
	}
	if k.SASLMechanism == "" {
		switch {
		case k.SASLUsername != "":
			return fmt.Errorf("config: kafka.sasl_username: set kafka.sasl_mechanism (%s) to use it", strings.Join(saslMechanisms, ", "))
		case k.SASLPassword != "":
			return fmt.Errorf("config: kafka.sasl_password: set kafka.sasl_mechanism (%s) to use it", strings.Join(saslMechanisms, ", "))
		}
		return nil
	}
	mech := strings.ToUpper(k.SASLMechanism)
	if !slices.Contains(saslMechanisms, mech) {
		return fmt.Errorf("config: kafka.sasl_mechanism: %q, want %s", k.SASLMechanism, strings.Join(saslMechanisms, ", "))
	}
	if k.SASLUsername == "" {
		return fmt.Errorf("config: kafka.sasl_username: required with kafka.sasl_mechanism %s", mech)
	}
	if k.SASLPassword == "" {
		return fmt.Errorf("config: kafka.sasl_password: required with kafka.sasl_mechanism %s (set EVENTLOGGING_KAFKA_SASL_PASSWORD)", mech)
	}
	return nil
}

// Redacted is a copy of c with every secret replaced by "***" (the SASL
// password, the registry and dashboard tokens, a password in sink.sql),
// for printing.
func (c Config) Redacted() Config {
	hide := func(s *string) {
		if *s != "" {
			*s = "***"
		}
	}
	hide(&c.Kafka.SASLPassword)
	hide(&c.Registry.WriteToken)
	hide(&c.Registry.Token)
	hide(&c.Dashboard.Token)
	hide(&c.Dashboard.ReplayToken)
	c.Sink.SQL = redactDSN(c.Sink.SQL)
	c.Sink.IcebergCatalog = redactDSN(c.Sink.IcebergCatalog)
	if u, err := url.Parse(c.Sink.Files); err == nil && u.User != nil {
		c.Sink.Files = u.Redacted()
	}
	return c
}

// validateFilesTarget checks the form of sink.files: a path, or a file://,
// s3:// or hdfs:// URL without credentials (the connection is checked when
// the sink opens it).
func validateFilesTarget(target string) error {
	scheme, _, ok := strings.Cut(target, "://")
	if !ok {
		return nil
	}
	switch strings.ToLower(scheme) {
	case "file", "s3", "hdfs":
	default:
		return fmt.Errorf("config: sink.files: unknown scheme %q, want a local path, file:///PATH, s3://BUCKET/PREFIX or hdfs://NAMENODE:PORT/PATH", scheme)
	}
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("config: sink.files: %w", err)
	}
	if u.User != nil {
		return errors.New("config: sink.files: credentials do not belong in the URL (S3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a shared config profile or the instance role)")
	}
	return nil
}

// SetKey sets the key named "section.key" (as in the file) from its text,
// as an environment override would: for the command-line flags of keys
// that are not text.
func (c *Config) SetKey(name, value string) error {
	section, key, _ := strings.Cut(name, ".")
	root := reflect.ValueOf(c).Elem()
	for i := range root.NumField() {
		if root.Type().Field(i).Tag.Get("yaml") != section {
			continue
		}
		sv := root.Field(i)
		for j := range sv.NumField() {
			if sv.Type().Field(j).Tag.Get("yaml") == key {
				if err := setFromString(sv.Field(j), value); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				return nil
			}
		}
	}
	return fmt.Errorf("no configuration key %s", name)
}

// applyEnv sets EVENTLOGGING_<SECTION>_<KEY> over the file's values, e.g.
// EVENTLOGGING_KAFKA_BROKERS=a:9092,b:9092 or EVENTLOGGING_PROCESS_IP=drop.
func applyEnv(c *Config, lookup func(string) (string, bool)) error {
	root := reflect.ValueOf(c).Elem()
	for i := range root.NumField() {
		section := root.Type().Field(i).Tag.Get("yaml")
		sv := root.Field(i)
		for j := range sv.NumField() {
			key := sv.Type().Field(j).Tag.Get("yaml")
			name := "EVENTLOGGING_" + strings.ToUpper(section+"_"+key)
			val, ok := lookup(name)
			if !ok {
				continue
			}
			if err := setFromString(sv.Field(j), val); err != nil {
				return fmt.Errorf("config: %s: %w", name, err)
			}
		}
	}
	return nil
}

func setFromString(f reflect.Value, s string) error {
	switch f.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration: write it with a unit, e.g. 5m, 30s or 1h30m", s)
		}
		f.SetInt(int64(d))
		return nil
	case map[string]string:
		m, err := ParseHealth(s)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(m))
		return nil
	case []string:
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		f.Set(reflect.ValueOf(parts))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("cannot be set from the environment (%s)", f.Type())
	}
	return nil
}

// redactDSN hides a password in a DSN for error messages: secrets are never
// printed. The password is what follows the user and a colon in the user
// information, after "scheme://" (or mysql:'s "mysql:"); the rest is kept,
// and a DSN with a user and no password is unchanged.
func redactDSN(dsn string) string {
	at := strings.Index(dsn, "@")
	if at < 0 {
		return dsn
	}
	user := 0 // where the user information starts
	if i := strings.Index(dsn[:at], "://"); i >= 0 {
		user = i + len("://")
	} else if strings.HasPrefix(dsn, "mysql:") {
		user = len("mysql:")
	}
	if j := strings.Index(dsn[user:at], ":"); j >= 0 {
		return dsn[:user+j+1] + "***" + dsn[at:]
	}
	return dsn
}
