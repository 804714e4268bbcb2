package loadgen

import (
	"strings"
	"testing"
)

// TestBenchFindings: loss and misrouting make the exit status 1, an
// interrupted run does not count its unfollowed events as lost.
func TestBenchFindings(t *testing.T) {
	ok := &Report{Follow: &FollowStats{Complete: true}}
	if err := Findings(ok); err != nil {
		t.Errorf("clean run: %v", err)
	}
	lost := &Report{Follow: &FollowStats{Lost: 3}}
	if err := Findings(lost); err == nil || !strings.Contains(err.Error(), "3 accepted events not found") {
		t.Errorf("lost: %v", err)
	}
	lost.StoppedBy = "interrupted"
	if err := Findings(lost); err != nil {
		t.Errorf("interrupted: %v", err)
	}
	mis := &Report{Follow: &FollowStats{UnexpectedErrors: 1}}
	if err := Findings(mis); err == nil {
		t.Error("misrouted event not a finding")
	}
}
