package capsule

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidTopicNameAgrees holds ValidTopicName's loop to Kafka's rule as a
// regexp: every name of up to 3 characters from a mix of legal and illegal
// bytes, and lengths around the 249 limit.
func TestValidTopicNameAgrees(t *testing.T) {
	rule := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
	ref := func(s string) bool { return rule.MatchString(s) && s != "." && s != ".." }
	alphabet := []byte("aZ09._-/ \x00\xff\n:+é")
	var names []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		names = append(names, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(prefix+string([]byte{c}), n-1)
		}
	}
	gen("", 3)
	for _, n := range []int{248, 249, 250, 300} {
		names = append(names, strings.Repeat("a", n), strings.Repeat("a", n-1)+"/")
	}
	for _, name := range names {
		if got, want := ValidTopicName(name), ref(name); got != want {
			t.Errorf("ValidTopicName(%q) = %v, want %v", name, got, want)
		}
	}
}
