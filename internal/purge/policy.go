package purge

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/eventlogging/eventlogging/internal/iphash"
)

// DefaultRetention is the retention of a Policy whose Retention is zero:
// 90 days.
const DefaultRetention = 90 * 24 * time.Hour

// DefaultBatchRows is the number of rows one SQL statement deletes or
// sanitises when Policy.BatchRows is zero.
const DefaultBatchRows = 10000

// ErrPolicy is wrapped by every error about an invalid Policy, from
// ParsePolicy, PurgeSQL or PurgeFiles.
var ErrPolicy = errors.New("purge: invalid policy")

// neverKept are the fields that may be hashed or dropped but never kept in
// clear, compared ignoring case: a capsule's clientIp and userAgent, and
// an Event Platform event's http.client_ip and request headers (the user
// agent among them), by their path in files and in sqlsink's columns
// (where the record's fields are under "event").
var neverKept = []string{"clientIp", "userAgent",
	"http.client_ip", "event.http.client_ip", "http.request_headers", "event.http.request_headers"}

// isNeverKept reports whether f is in neverKept or inside one of its
// objects (http.request_headers.user-agent).
func isNeverKept(f string) bool {
	for _, nk := range neverKept {
		if strings.EqualFold(f, nk) || (len(f) > len(nk) && f[len(nk)] == '.' && strings.EqualFold(f[:len(nk)], nk)) {
			return true
		}
	}
	return false
}

// bookkeeping are the capsule fields every sanitised row or record keeps:
// they identify the event and its age, and hold nothing about the user.
var bookkeeping = []string{"uuid", "dt", "timestamp", "schema", "revision"}

// Rule is the allow-list of one schema: the fields kept in clear and the
// fields replaced by their salted HMAC once the data is older than the
// retention. Every other field is dropped.
//
// A field is named by its path in the capsule, segments joined with ".":
// "wiki", "webHost", "event.action", "event.user.editCount". In SQL tables
// the path names the column sqlsink flattened it to (segments joined with
// "_", compared ignoring ASCII case: "event.user.editCount" is column
// event_user_editCount). List leaf fields: in files a path naming an
// object keeps or hashes the whole object, but in SQL it only names the
// column of that name (sqlsink's JSON column of undeclared members), not
// the columns of its flattened properties. Columns whose names sqlsink had
// to shorten or suffix with a hash (non-ASCII or very long property names,
// collisions) match no path and are dropped.
type Rule struct {
	// Keep lists the fields kept unchanged. clientIp and userAgent (and an
	// Event Platform event's http.client_ip and http.request_headers) may
	// not be listed.
	Keep []string `yaml:"keep"`
	// Hash lists the fields replaced by the lowercase hex
	// HMAC-SHA256(Policy.Salt, value). A field may not be in both lists.
	Hash []string `yaml:"hash"`
}

// Policy says what PurgeSQL and PurgeFiles do. The zero value is usable
// with defaults: 90 days of retention, no allow-lists (every old row and
// partition is deleted), time.Now, logging discarded.
type Policy struct {
	// Retention is the age past which data is deleted or sanitised. Zero
	// means DefaultRetention; negative is invalid.
	Retention time.Duration
	// Rules holds the allow-list of each schema, by schema name (the
	// capsule's "schema" field). Data of a schema without a rule is
	// deleted when old; data of a schema with one is sanitised.
	Rules map[string]Rule
	// Salt keys the HMAC of hashed fields. Required when a rule hashes
	// anything. Changing it changes every hash written afterwards.
	Salt []byte
	// DryRun makes the purge change nothing: Report counts what would be
	// done and Report.Actions lists it.
	DryRun bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives counts per table and partition. Nil: discard.
	Logger *slog.Logger
	// BatchRows bounds the rows one SQL statement (one transaction)
	// deletes or sanitises, so a big table is never locked for long.
	// Zero means DefaultBatchRows.
	BatchRows int
}

// Report says what a purge did (or, with DryRun, would do).
type Report struct {
	// Tables counts the sqlsink tables examined.
	Tables int
	// RowsDeleted counts rows deleted: old rows of schemas without a rule.
	RowsDeleted int
	// RowsSanitised counts old rows sanitised by this run.
	RowsSanitised int
	// Partitions counts the old hour partitions examined (including those
	// sanitised by an earlier run).
	Partitions int
	// PartitionsDeleted counts hour partitions removed.
	PartitionsDeleted int
	// PartitionsSanitised counts hour partitions sanitised by this run.
	PartitionsSanitised int
	// Actions lists, in a dry run, what would be done, one line each.
	Actions []string
}

// policyFile is the YAML form of a Policy.
type policyFile struct {
	Retention string          `yaml:"retention"`
	SaltHex   string          `yaml:"salt_hex"`
	DryRun    bool            `yaml:"dry_run"`
	BatchRows int             `yaml:"batch_rows"`
	Schemas   map[string]Rule `yaml:"schemas"`
}

// ParsePolicy parses a policy from YAML:
//
//	retention: 2160h        # Go duration, or days as "90d"; default 90d
//	salt_hex: 8f3a…         # HMAC key, hex; required when a rule hashes
//	batch_rows: 10000       # optional, rows per SQL statement
//	dry_run: false          # optional
//	schemas:
//	  Edit:
//	    keep: [wiki, event.action, event.editor]
//	    hash: [event.user.id, clientIp]
//
// Unknown keys are errors. The result is validated: a rule may not keep
// clientIp or userAgent (hash them or leave them out), nor list a field
// twice, and a rule that hashes needs a salt. Errors wrap ErrPolicy.
func ParsePolicy(yamlBytes []byte) (Policy, error) {
	var f policyFile
	dec := yaml.NewDecoder(bytes.NewReader(yamlBytes))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	p := Policy{Rules: f.Schemas, DryRun: f.DryRun, BatchRows: f.BatchRows}
	if f.Retention != "" {
		d, err := parseRetention(f.Retention)
		if err != nil {
			return Policy{}, fmt.Errorf("%w: retention: %w", ErrPolicy, err)
		}
		p.Retention = d
	}
	if f.SaltHex != "" {
		salt, err := hex.DecodeString(f.SaltHex)
		if err != nil {
			return Policy{}, fmt.Errorf("%w: salt_hex: %w", ErrPolicy, err)
		}
		p.Salt = salt
	}
	if err := p.validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// parseRetention parses a Go duration or a number of days ("90d").
func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*366 {
			return 0, fmt.Errorf("%q: want a positive number of days or a Go duration", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a Go duration such as 2160h, or days such as 90d", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration", s)
	}
	return d, nil
}

// validate checks p; errors wrap ErrPolicy.
func (p *Policy) validate() error {
	if p.Retention < 0 {
		return fmt.Errorf("%w: retention %s is negative", ErrPolicy, p.Retention)
	}
	if p.BatchRows < 0 {
		return fmt.Errorf("%w: batch_rows %d is negative", ErrPolicy, p.BatchRows)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Rules)) {
		r := p.Rules[name]
		if name == "" {
			return fmt.Errorf("%w: a rule has an empty schema name", ErrPolicy)
		}
		seen := map[string]string{}
		check := func(list, field string) error {
			if err := validField(field); err != nil {
				return fmt.Errorf("%w: schema %s: %s %q: %w", ErrPolicy, name, list, field, err)
			}
			key := strings.ToLower(field)
			if prev, ok := seen[key]; ok {
				return fmt.Errorf("%w: schema %s: field %q is listed twice (%s and %s)", ErrPolicy, name, field, prev, list)
			}
			seen[key] = list
			return nil
		}
		for _, f := range r.Keep {
			if err := check("keep", f); err != nil {
				return err
			}
			if isNeverKept(f) {
				return fmt.Errorf("%w: schema %s: %s may never be kept in clear: move it to hash or leave it out (then it is dropped)", ErrPolicy, name, f)
			}
		}
		for _, f := range r.Hash {
			if err := check("hash", f); err != nil {
				return err
			}
		}
		if len(r.Hash) > 0 && len(p.Salt) == 0 {
			return fmt.Errorf("%w: schema %s hashes fields but the policy has no salt (salt_hex)", ErrPolicy, name)
		}
	}
	return nil
}

// validField checks a dotted field path.
func validField(f string) error {
	if f == "" {
		return errors.New("empty field name")
	}
	for _, seg := range strings.Split(f, ".") {
		if seg == "" {
			return errors.New("empty path segment")
		}
	}
	for _, b := range bookkeeping {
		if strings.EqualFold(f, b) {
			return fmt.Errorf("%s is always kept and cannot be listed", b)
		}
	}
	return nil
}

// withDefaults returns p validated, with its defaults filled in.
func (p Policy) withDefaults() (Policy, error) {
	if err := p.validate(); err != nil {
		return p, err
	}
	if p.Retention == 0 {
		p.Retention = DefaultRetention
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if p.BatchRows == 0 {
		p.BatchRows = DefaultBatchRows
	}
	return p, nil
}

// cutoff is the instant before which data is old.
func (p *Policy) cutoff() time.Time {
	return p.Now().Add(-p.Retention).UTC()
}

// hasher returns the HMAC of hashed fields.
func (p *Policy) hasher() *iphash.Hasher {
	return iphash.NewHasher(iphash.SHA256, p.Salt)
}
