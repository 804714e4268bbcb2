package sink

import (
	"testing"
	"time"
)

func TestParseDT(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2024-01-05T07:08:09Z", time.Date(2024, 1, 5, 7, 8, 9, 0, time.UTC), true},
		{"2024-01-05T07:08:09.123Z", time.Date(2024, 1, 5, 7, 8, 9, 123e6, time.UTC), true},
		{"2024-01-05T09:08:09+02:00", time.Date(2024, 1, 5, 7, 8, 9, 0, time.UTC), true},
		{"2024-02-31T07:08:09Z", time.Time{}, false},
		{"2024-01-05 07:08:09", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, ok := parseDT(tc.in)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseDT(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReceiveTime(t *testing.T) {
	platform := map[string]any{"$schema": "/x/1.0.0", "dt": "2020-01-01T00:00:00Z", "meta": map[string]any{"dt": "2024-01-05T07:00:00Z"}}
	if got, ok := receiveTime(platform, true); !ok || !got.Equal(time.Date(2024, 1, 5, 7, 0, 0, 0, time.UTC)) {
		t.Fatalf("Event Platform: %v %v, want meta.dt", got, ok)
	}
	if _, ok := receiveTime(map[string]any{"dt": "0001-01-01T00:00:00Z"}, false); ok {
		t.Fatal("year 1 accepted")
	}
	// Without a usable dt, the Kafka timestamp, if sane.
	ts := time.Date(2024, 1, 5, 9, 0, 0, 0, time.FixedZone("x", 3600))
	if got, ok := ReceiveTime(map[string]any{"dt": "yesterday"}, false, ts); !ok || !got.Equal(ts) || got.Location() != time.UTC {
		t.Errorf("Kafka timestamp: %v %v, want %v in UTC", got, ok, ts)
	}
	if _, ok := ReceiveTime(map[string]any{}, false, time.Time{}); ok {
		t.Error("no dt and a zero Kafka timestamp accepted")
	}
}

// The fast path of parseDT agrees with time.Parse.
func FuzzParseDT(f *testing.F) {
	for _, s := range []string{"2024-01-05T07:08:09Z", "2024-02-29T23:59:59Z", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-05T07:08:60Z", "2024-01-05T07:08:09.5+01:00", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseDT(s)
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok != (err == nil) || ok && !got.Equal(want) {
			t.Fatalf("parseDT(%q) = %v, %v; time.Parse: %v, %v", s, got, ok, want, err)
		}
	})
}
