package spool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendKeepsKeys: a record's key is spooled with it (the processor's
// outputs are keyed by uuid, so that every copy of an event lands in one
// partition, where the sinks drop the copies): nil, empty and binary keys
// read back as written, across a reopen, and FrameSize is the bytes taken.
func TestAppendKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	in := []Record{
		{Topic: "t", Value: []byte("no key")},
		{Topic: "t", Key: []byte{}, Value: []byte("empty key")},
		{Topic: "t", Key: []byte("5f0c1d7e-2b7a-5a4e-9d2c-3b1e4f5a6b7c"), Value: []byte("uuid key")},
		{Topic: "other", Key: []byte{0, 1, 0, 255}, Value: []byte("binary key with zero bytes")},
		{Topic: "t", Key: []byte("k"), Value: nil},
	}
	before := q.Bytes()
	if err := q.Append(in); err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, r := range in {
		want += FrameSize(r)
	}
	if got := q.Bytes() - before; got != want {
		t.Errorf("the batch took %d bytes, FrameSize says %d", got, want)
	}
	check := func(q *Queue) {
		t.Helper()
		out, err := q.Peek(len(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in) {
			t.Fatalf("read %d records, want %d", len(out), len(in))
		}
		for i := range in {
			if out[i].Topic != in[i].Topic || !bytes.Equal(out[i].Value, in[i].Value) || !bytes.Equal(out[i].Key, in[i].Key) || (out[i].Key == nil) != (in[i].Key == nil) {
				t.Errorf("record %d: read %q key %q (nil %v) %q, wrote %q key %q (nil %v) %q", i, out[i].Topic, out[i].Key, out[i].Key == nil, out[i].Value, in[i].Topic, in[i].Key, in[i].Key == nil, in[i].Value)
			}
		}
	}
	check(q)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q, err = Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	check(q)
}

// TestReadsSpoolWithoutKeys: a segment written before keys were spooled
// (testdata: frames of topic and value only) reads as records without a key.
func TestReadsSpoolWithoutKeys(t *testing.T) {
	dir := t.TempDir()
	// The frame of {Topic: "raw", Value: "line"} as the old format wrote it.
	frame := appendFrames(nil, []Record{{Topic: "raw", Value: []byte("line")}}, FrameSize(Record{Topic: "raw", Value: []byte("line")}))
	if !bytes.Equal(frame[8:], []byte("\x00\x03rawline")) {
		t.Fatalf("a keyless frame's payload is %q, want the old layout", frame[8:])
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.spool"), frame, 0o600); err != nil {
		t.Fatal(err)
	}
	q, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	out, err := q.Peek(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Topic != "raw" || out[0].Key != nil || string(out[0].Value) != "line" {
		t.Fatalf("read %+v, want one keyless record raw/line", out)
	}
}

// TestAppendRefusesHeaders: headers are not spooled, and a topic holding a
// zero byte (which would read back as a key) is refused; either refuses
// the batch whole rather than spooling it changed.
func TestAppendRefusesHeaders(t *testing.T) {
	q, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for _, c := range []struct {
		r    Record
		want string
	}{
		{Record{Topic: "t", Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}}}, "headers are not spooled"},
		{Record{Topic: "t\x00k", Value: []byte("v")}, "holds a zero byte"},
		{Record{Topic: "t", Key: make([]byte, 1<<16), Value: []byte("v")}, "at most 65535 fit"},
	} {
		err := q.Append([]Record{{Topic: "t", Value: []byte("ok")}, c.r})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Append of %.40q = %v, want a refusal saying %q", c.r.Topic, err, c.want)
		}
	}
	if n := q.Len(); n != 0 {
		t.Errorf("a refused batch left %d records", n)
	}
}
