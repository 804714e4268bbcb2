package lineformat

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

type parserVectors struct {
	IPHashKeyHex string `json:"ip_hash_key_hex"`
	Positive     []struct {
		Name     string          `json:"name"`
		Format   string          `json:"format"`
		Raw      string          `json:"raw"`
		Expected json.RawMessage `json:"expected"`
	} `json:"positive"`
	Negative []struct {
		Name      string `json:"name"`
		Format    string `json:"format"`
		Raw       string `json:"raw"`
		ErrorType string `json:"error_type"`
	} `json:"negative"`
}

// loadReference decodes a file of the test vectors taken from the original
// Python implementation (testdata/reference/eventlogging).
func loadReference(tb testing.TB, name string, v any) { testsupport.LoadReference(tb, name, v) }

// decodeObject decodes a JSON object keeping numbers as json.Number, so
// that values compare exactly.
func decodeObject(tb testing.TB, data []byte) map[string]any {
	tb.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		tb.Fatalf("decode %q: %v", data, err)
	}
	return m
}

// TestReferenceParser checks the parser against parser.json. The expected
// capsules there are the original's final output, so part of each is not
// the parser's own work; the processor package checks those parts end to
// end:
//
//   - uuid is computed by the caller from recvFrom, seqId and timestamp;
//   - clientIp is hashed by the caller: here the raw %h text is checked by
//     hashing it with the vectors' HMAC-SHA1 key;
//   - the original merged the decoded capsule over the line fields (so a
//     client could forge recvFrom, seqId, timestamp, clientIp): where the
//     capsule holds an expected key, the capsule's value is what is
//     checked, and the merge itself is the caller's.
func TestReferenceParser(t *testing.T) {
	var vec parserVectors
	loadReference(t, "parser.json", &vec)
	key, err := hex.DecodeString(vec.IPHashKeyHex)
	if err != nil {
		t.Fatalf("ip_hash_key_hex: %v", err)
	}
	hashIP := func(ip string) string {
		m := hmac.New(sha1.New, key)
		m.Write([]byte(ip))
		return hex.EncodeToString(m.Sum(nil))
	}
	if len(vec.Positive) == 0 || len(vec.Negative) == 0 {
		t.Fatal("parser.json has no positive or no negative cases")
	}
	for _, tc := range vec.Positive {
		t.Run(tc.Name, func(t *testing.T) {
			f, err := Compile(tc.Format)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.Format, err)
			}
			var out Fields
			if err := f.Parse([]byte(tc.Raw), &out); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if out.Capsule == nil {
				t.Fatal("no capsule")
			}
			capsule := decodeObject(t, out.Capsule)
			expected := decodeObject(t, tc.Expected)
			for k, want := range expected {
				if k == "uuid" {
					continue // the caller's
				}
				if got, ok := capsule[k]; ok {
					if !reflect.DeepEqual(got, want) {
						t.Errorf("capsule %s = %#v, want %#v", k, got, want)
					}
					continue
				}
				switch k {
				case "event", "schema", "revision", "wiki", "webHost":
					t.Errorf("capsule has no %s (want %#v)", k, want)
				case "clientIp":
					if !out.HasClientIP {
						t.Errorf("no clientIp, want one hashing to %v", want)
					} else if got := hashIP(out.ClientIP); got != want.(string) {
						t.Errorf("clientIp %q hashes to %s, want %v", out.ClientIP, got, want)
					}
				case "timestamp":
					if !out.HasTimestamp || json.Number(itoa(out.Timestamp)) != want {
						t.Errorf("timestamp = %d (has %v), want %v", out.Timestamp, out.HasTimestamp, want)
					}
				default:
					fl, ok := out.Lookup(k)
					switch {
					case !ok:
						t.Errorf("no field %s, want %#v", k, want)
					case fl.IsInt:
						if json.Number(itoa(fl.Int)) != want {
							t.Errorf("%s = %d, want %v", k, fl.Int, want)
						}
					case fl.Str != want:
						t.Errorf("%s = %q, want %#v", k, fl.Str, want)
					}
				}
			}
		})
	}

	// The override case: the parser's own outputs are the line's values;
	// the capsule's forged ones win only in the caller's 2015 merge.
	t.Run("capsule_fields_override_line_fields/line_values", func(t *testing.T) {
		for _, tc := range vec.Positive {
			if tc.Name != "capsule_fields_override_line_fields" {
				continue
			}
			f, err := Compile(tc.Format)
			if err != nil {
				t.Fatal(err)
			}
			var out Fields
			if err := f.Parse([]byte(tc.Raw), &out); err != nil {
				t.Fatal(err)
			}
			rf, _ := out.Lookup("recvFrom")
			seq, _ := out.Lookup("seqId")
			if rf.Str != "cp1.example" || seq.Int != 77 || out.Timestamp != 1443657600 || out.ClientIP != "10.0.0.1" {
				t.Errorf("line values: recvFrom %q seqId %d timestamp %d clientIp %q", rf.Str, seq.Int, out.Timestamp, out.ClientIP)
			}
			return
		}
		t.Fatal("case capsule_fields_override_line_fields missing from parser.json")
	})

	for _, tc := range vec.Negative {
		t.Run("negative/"+tc.Name, func(t *testing.T) {
			f, err := Compile(tc.Format)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tc.Format, err)
			}
			var out Fields
			err = f.Parse([]byte(tc.Raw), &out)
			switch tc.Name {
			case "line_does_not_match":
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, ErrNoMatch) {
					t.Fatalf("Parse error = %v, want a *ParseError wrapping ErrNoMatch", err)
				}
				if pe.Spec != "%q" || pe.Offset != 0 || !strings.Contains(pe.Error(), "line does not match format at %q") {
					t.Errorf("error %q: Spec %q Offset %d", pe, pe.Spec, pe.Offset)
				}
			case "broken_json_in_query":
				// %12 decodes to a control byte: valid UTF-8, so the
				// parser is content; the JSON error is the caller's.
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !bytes.Contains(out.Capsule, []byte("\x12345terfdit")) || json.Valid(out.Capsule) {
					t.Errorf("capsule %q: want the %%12 byte decoded and invalid JSON", out.Capsule)
				}
			case "missing_seqId_for_uuid":
				// The line has no seqId; the caller cannot build the
				// uuid. The parser sees nothing wrong.
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if f.NamedIndex("seqId") != -1 {
					t.Error("format has a seqId")
				}
				if _, ok := decodeObject(t, out.Capsule)["seqId"]; ok {
					t.Error("capsule has a seqId")
				}
			default:
				t.Errorf("no assertion for negative case %q (error_type %s): add one", tc.Name, tc.ErrorType)
			}
		})
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestReferenceNCSA checks %t against misc.json's ncsa_to_unix cases.
func TestReferenceNCSA(t *testing.T) {
	var misc struct {
		NCSAToUnix []struct {
			In  string `json:"in"`
			Out int64  `json:"out"`
		} `json:"ncsa_to_unix"`
	}
	loadReference(t, "misc.json", &misc)
	if len(misc.NCSAToUnix) == 0 {
		t.Fatal("misc.json has no ncsa_to_unix cases")
	}
	f, err := Compile("%t")
	if err != nil {
		t.Fatal(err)
	}
	var out Fields
	for _, tc := range misc.NCSAToUnix {
		if err := f.Parse([]byte(tc.In), &out); err != nil {
			t.Errorf("%s: %v", tc.In, err)
			continue
		}
		if !out.HasTimestamp || out.Timestamp != tc.Out {
			t.Errorf("%s: timestamp %d (has %v), want %d", tc.In, out.Timestamp, out.HasTimestamp, tc.Out)
		}
	}
}
