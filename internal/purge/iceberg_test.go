package purge

import (
	"testing"

	"github.com/eventlogging/eventlogging/internal/capsule"
)

// TableRules hands a table-format sink the policy's cutoff and, per schema,
// the sanitiser of its allow-list rule (nil without a rule).
func TestTableRules(t *testing.T) {
	p := testPolicy(t)
	cutoff, sanitiser, err := p.TableRules()
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(-p.Retention).UTC(); !cutoff.Equal(want) {
		t.Errorf("cutoff %v, want %v", cutoff, want)
	}
	if sanitiser("Click") != nil {
		t.Error("a schema without a rule got a sanitiser")
	}
	f := sanitiser("Edit")
	if f == nil {
		t.Fatal("Edit has a rule but no sanitiser")
	}
	c := makeCapsule(t, testEvent{"Edit", 1, true})
	got := f(c)
	if string(capsule.AppendValue(nil, got)) != sanitisedEdit(c) {
		t.Errorf("sanitised row %s, want %s", capsule.AppendValue(nil, got), sanitisedEdit(c))
	}
}
