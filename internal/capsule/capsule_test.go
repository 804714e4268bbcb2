package capsule

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventlogging/eventlogging/internal/testsupport"

	"github.com/google/uuid"
)

// loadReference decodes one file of testdata/reference/eventlogging (the
// original implementation's vectors, copied into the repository).
func loadReference(t testing.TB, name string, v any) { testsupport.LoadReference(t, name, v) }

func TestUUIDReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			Input struct {
				RecvFrom  string `json:"recvFrom"`
				SeqID     int64  `json:"seqId"`
				Timestamp *int64 `json:"timestamp"`
				DT        string `json:"dt"`
			} `json:"input"`
			Expected string `json:"expected_uuid"`
			URL      string `json:"url"`
		} `json:"cases"`
	}
	loadReference(t, "capsule_uuid.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range ref.Cases {
		var got string
		if c.Input.Timestamp != nil {
			got = UUID(c.Input.RecvFrom, c.Input.SeqID, *c.Input.Timestamp)
		} else {
			got = UUIDFromDT(c.Input.RecvFrom, c.Input.SeqID, c.Input.DT)
		}
		if got != c.Expected {
			t.Errorf("%s: uuid %s, want %s", c.URL, got, c.Expected)
		}
		if UUIDFromURL(c.URL) != c.Expected {
			t.Errorf("%s: UUIDFromURL disagrees", c.URL)
		}
	}
}

func TestTopicTemplateReference(t *testing.T) {
	var ref struct {
		TopicFormat struct {
			Cases []struct {
				Format string `json:"format"`
				Out    string `json:"out"`
			} `json:"cases"`
			Event struct {
				Schema   string `json:"schema"`
				Revision int64  `json:"revision"`
			} `json:"event"`
		} `json:"topic_format"`
	}
	loadReference(t, "misc.json", &ref)
	for _, c := range ref.TopicFormat.Cases {
		tt, err := ParseTopicTemplate(c.Format)
		if err != nil {
			t.Fatalf("%q: %v", c.Format, err)
		}
		if got := tt.Format(ref.TopicFormat.Event.Schema, ref.TopicFormat.Event.Revision); got != c.Out {
			t.Errorf("%q: got %q, want %q", c.Format, got, c.Out)
		}
	}
	for _, bad := range []string{"x_{schem}", "x_{schema", "x}"} {
		if _, err := ParseTopicTemplate(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

func TestFlattenReference(t *testing.T) {
	var ref struct {
		Flatten []struct {
			In  json.RawMessage `json:"in"`
			Out map[string]any  `json:"out"`
		} `json:"flatten"`
		TopicFormat struct {
			Event map[string]any `json:"event"`
		} `json:"topic_format"`
	}
	loadReference(t, "misc.json", &ref)
	for i, c := range ref.Flatten {
		var in map[string]any
		if err := json.Unmarshal(c.In, &in); err != nil {
			in = ref.TopicFormat.Event // "same event as topic_format.event"
		}
		if got := Flatten(in); !reflect.DeepEqual(got, c.Out) {
			t.Errorf("case %d: got %v, want %v", i, got, c.Out)
		}
	}
}

func TestAppendValueMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		`{"b":1,"a":[true,false,null,"x\"y\\z\n\t\u0001"],"c":{"z":1.5,"y":-2e-9,"x":"☆ 彡"}}`,
		`{"s":"\u2028\u2029","big":12345678901234567890,"f":0.1,"e":1e300}`,
		`[]`, `{}`, `"plain"`, `3.14159`,
	}
	for _, in := range inputs {
		// Plain float64 decoding: output must equal encoding/json's.
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(v)
		want = bytes.ReplaceAll(want, []byte(`\u003c`), []byte("<"))
		if got := AppendValue(nil, v); !bytes.Equal(got, want) {
			t.Errorf("AppendValue(%s)\n got %s\nwant %s", in, got, want)
		}
		// UseNumber decoding keeps numbers verbatim and must round-trip.
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var n any
		if err := dec.Decode(&n); err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(AppendValue(nil, n), &back); err != nil {
			t.Errorf("AppendValue(%s) is not valid JSON: %v", in, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("round trip of %s: got %v, want %v", in, back, v)
		}
	}
}

func TestAppendStringInvalidUTF8(t *testing.T) {
	got := string(AppendString(nil, "a\xffb"))
	if got != `"a\ufffdb"` {
		t.Fatalf("got %s", got)
	}
}

func TestCapsuleJSON(t *testing.T) {
	c := Capsule{
		Event: map[string]any{"b": json.Number("2"), "a": "x"}, Schema: "Generic", Revision: 13,
		Wiki: "testwiki", RecvFrom: "cp1", SeqID: 7, HasSeqID: true, Timestamp: 1358637398,
		DT: "2013-01-19T23:16:38Z", UUID: "u", UserAgent: "UA", Topic: "eventlogging_Generic",
	}
	want := `{"event":{"a":"x","b":2},"schema":"Generic","revision":13,"wiki":"testwiki","recvFrom":"cp1","seqId":7,"timestamp":1358637398,"dt":"2013-01-19T23:16:38Z","uuid":"u","userAgent":"UA","topic":"eventlogging_Generic"}`
	if got := string(c.AppendJSON(nil)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRecoverSchema(t *testing.T) {
	cases := []struct {
		raw    string
		schema string
		rev    int64
	}{
		{`?%7B%22revision%22%3A11568715%2C%22schema%22%3A%22MobileWebMainMenuClickTracking%22%2C%22webHost%22%3A%12345`, "MobileWebMainMenuClickTracking", 11568715},
		{`{"schema": "Foo", "revision": 3, "event": [`, "Foo", 3},
		{`garbage`, "unknown", -1},
	}
	for _, c := range cases {
		s, r := RecoverSchema([]byte(c.raw))
		if s != c.schema || r != c.rev {
			t.Errorf("%s: got %s/%d, want %s/%d", c.raw, s, r, c.schema, c.rev)
		}
	}
}

func BenchmarkUUID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		UUID("cp3022.esams.wikimedia.org", 132073, 1358637398)
	}
}

func TestFormatDT(t *testing.T) {
	for _, sec := range []int64{0, 1358637398, 1442872527, 253402300799, -1, 4102444800} {
		tm := time.Unix(sec, 0)
		if got, want := FormatDT(tm), tm.UTC().Format("2006-01-02T15:04:05Z"); got != want {
			t.Errorf("FormatDT(%d) = %s, want %s", sec, got, want)
		}
	}
}

func TestUUIDMatchesLibrary(t *testing.T) {
	for _, name := range []string{"event://a/?seqId=1&timestamp=2", "", strings.Repeat("x", 300)} {
		want := strings.ReplaceAll(uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String(), "-", "")
		if got := UUIDFromURL(name); got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
}

// BenchmarkAppendJSON measures encoding one capsule of a four-field event.
func BenchmarkAppendJSON(b *testing.B) {
	ev, err := Decode([]byte(`{"button":"save","page":"Main_Page","count":3,"loggedIn":true}`))
	if err != nil {
		b.Fatal(err)
	}
	c := &Capsule{Event: ev.(map[string]any), Schema: "ButtonClick", Revision: 1, Wiki: "enwiki", WebHost: "en.wikipedia.org",
		RecvFrom: "cp1.example", SeqID: 4724275, HasSeqID: true, Timestamp: 1764496800, DT: "2026-11-30T10:00:00Z",
		UUID: UUID("cp1.example", 4724275, 1764496800), UserAgent: "Mozilla/5.0", ClientIP: "c0ffee", Topic: "eventlogging_ButtonClick"}
	buf := c.AppendJSON(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = c.AppendJSON(buf[:0])
	}
}
