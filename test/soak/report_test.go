package main

import (
	"maps"
	"slices"
	"testing"
)

// TestVerdict: each way an event can go wrong is reported as such, and a
// clean run passes.
func TestVerdict(t *testing.T) {
	one := func(src, uuid string) []sighting { return []sighting{{uuid: uuid, src: src}} }
	two := func(src, uuid string) []sighting {
		return []sighting{{uuid: uuid, src: src}, {uuid: uuid, src: src + "'"}}
	}
	acks := map[uint64]ack{
		0: {Seq: 0, Mode: "beacon", Acked: true},
		1: {Seq: 1, Mode: "post", Acked: true, UUID: "u1", Answer: "accepted"},
		2: {Seq: 2, Mode: "hasty", Acked: true, Invalid: true},
		3: {Seq: 3, Mode: "beacon", Acked: false},
		4: {Seq: 4, Mode: "probe", Acked: true},
	}
	clean := func() *found {
		return &found{
			sql:     map[uint64][]sighting{0: one("t", "u0"), 1: one("t", "u1"), 4: one("t", "u4")},
			parquet: map[uint64][]sighting{0: one("p", "u0"), 1: one("p", "u1"), 4: one("p", "u4")},
			iceberg: map[uint64][]sighting{0: one("i", "u0"), 1: one("i", "u1"), 4: one("i", "u4")},
			errors:  map[uint64]int{2: 1, 4: 1}, // a probe was an EventError before its push
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(f *found)
		check  func(r *report) []uint64
	}{
		{"lost in SQL", func(f *found) { delete(f.sql, 0) }, func(r *report) []uint64 { return r.lostSQL }},
		{"lost in Parquet", func(f *found) { delete(f.parquet, 4) }, func(r *report) []uint64 { return r.lostParquet }},
		{"lost in Iceberg", func(f *found) { delete(f.iceberg, 1) }, func(r *report) []uint64 { return r.lostIceberg }},
		{"twice in SQL", func(f *found) { f.sql[1] = two("t", "u1") }, func(r *report) []uint64 { return r.dupSQL }},
		{"twice in Parquet", func(f *found) { f.parquet[0] = two("p", "u0") }, func(r *report) []uint64 { return r.dupParquet }},
		{"twice in Iceberg", func(f *found) { f.iceberg[4] = two("i", "u4") }, func(r *report) []uint64 { return r.dupIceberg }},
		{"invalid without EventError", func(f *found) { delete(f.errors, 2) }, func(r *report) []uint64 { return r.lostInvalid }},
		{"invalid in a sink", func(f *found) { f.sql[2] = one("t", "u2") }, func(r *report) []uint64 { return r.misrouted }},
		{"valid in the error topic", func(f *found) { f.errors[0] = 1 }, func(r *report) []uint64 { return r.misrouted }},
		{"uuid not the one answered", func(f *found) { f.parquet[1] = one("p", "other") }, func(r *report) []uint64 { return r.uuidMismatch }},
		{"never sent", func(f *found) { f.iceberg[99] = one("i", "u99") }, func(r *report) []uint64 { return r.invented }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := clean()
			tc.mutate(f)
			r := verdict(acks, f)
			if !r.failed() || len(tc.check(r)) != 1 {
				t.Errorf("failed %v, finding %v", r.failed(), tc.check(r))
			}
		})
	}
	f := clean()
	f.sql[3] = one("t", "u3") // not acknowledged, stored anyway: allowed
	r := verdict(acks, f)
	if r.failed() || r.storedUnacked != 1 || r.acked != 4 || r.ackedInvalid != 1 {
		t.Errorf("clean run: %+v", r)
	}
	if got := slices.Sorted(maps.Keys(r.byMode)); !slices.Equal(got, []string{"beacon", "hasty", "post", "probe"}) {
		t.Errorf("modes %v", got)
	}
}
