package schema

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/eventlogging/eventlogging/internal/testsupport"
)

func TestDirSourceList(t *testing.T) {
	got, err := NewDirSource(schemaDir).List()
	if err != nil {
		t.Fatal(err)
	}
	// Edit/007.json (not canonical) and README.md are skipped.
	want := []ID{
		{"Broken", 1}, {"ButtonClick", 7}, {"Edit", 1}, {"Malformed", 1},
		{"NavigationTiming", 2}, {"PageView", 3}, {"Remote", 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
	for _, id := range got {
		if _, err := NewDirSource(schemaDir).Fetch(t.Context(), id); err != nil {
			t.Errorf("Fetch(%v) of a listed id: %v", id, err)
		}
	}
	if _, err := NewDirSource(filepath.Join(t.TempDir(), "missing")).List(); err == nil {
		t.Error("List of a missing folder succeeded")
	}
}

func TestDirSourceFetch(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		testsupport.WriteFile(t, filepath.Join(dir, rel), content)
	}
	write("A/1.json", `{"title": "json"}`)
	write("A/1.yaml", `title: yaml`)
	write("A/2.yml", `title: yml`)
	write("secret.json", `{}`)
	src := NewDirSource(filepath.Join(dir))

	tests := []struct {
		id       ID
		want     string
		notFound bool
	}{
		{id: ID{"A", 1}, want: `{"title": "json"}`}, // .json first
		{id: ID{"A", 2}, want: `title: yml`},
		{id: ID{"A", 3}, notFound: true},
		{id: ID{"B", 1}, notFound: true},
		{id: ID{"..", 1}, notFound: true}, // never leaves the folder
		{id: ID{"A/../secret", 1}, notFound: true},
		{id: ID{"A", 0}, notFound: true},
	}
	for _, tt := range tests {
		got, err := src.Fetch(t.Context(), tt.id)
		if tt.notFound {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("Fetch(%v) = %q, %v; want ErrNotFound", tt.id, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Fetch(%v) = %q, %v; want %q", tt.id, got, err, tt.want)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := src.Fetch(ctx, ID{"A", 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Fetch with a cancelled ctx = %v", err)
	}
}
