package dashboard

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSideBySide(t *testing.T) {
	tests := []struct {
		name           string
		a, b           string
		left, right    []string // ops of each row's cells
		added, removed int
	}{
		{
			name: "equal", a: "x\ny\n", b: "x\ny\n",
			left: []string{"same", "same"}, right: []string{"same", "same"},
		},
		{
			name: "line added", a: "x\nz\n", b: "x\ny\nz\n",
			left: []string{"same", "empty", "same"}, right: []string{"same", "added", "same"}, added: 1,
		},
		{
			name: "line removed", a: "x\ny\nz\n", b: "x\nz\n",
			left: []string{"same", "removed", "same"}, right: []string{"same", "empty", "same"}, removed: 1,
		},
		{
			name: "line changed faces its replacement", a: "x\nold\nz\n", b: "x\nnew\nnewer\nz\n",
			left: []string{"same", "removed", "empty", "same"}, right: []string{"same", "added", "added", "same"}, added: 2, removed: 1,
		},
		{
			name: "from nothing", a: "", b: "x\n",
			left: []string{"empty"}, right: []string{"added"}, added: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, added, removed := sideBySide(tt.a, tt.b)
			var left, right []string
			for _, r := range rows {
				left = append(left, r.Left.Op)
				right = append(right, r.Right.Op)
			}
			if !slices.Equal(left, tt.left) || !slices.Equal(right, tt.right) || added != tt.added || removed != tt.removed {
				t.Errorf("got %q | %q (+%d -%d), want %q | %q (+%d -%d)", left, right, added, removed, tt.left, tt.right, tt.added, tt.removed)
			}
		})
	}

	// Line numbers follow each version.
	rows, _, _ := sideBySide("a\nb\n", "b\nc\n")
	var nums [][2]int
	for _, r := range rows {
		nums = append(nums, [2]int{r.Left.Line, r.Right.Line})
	}
	if want := [][2]int{{1, 0}, {2, 1}, {0, 2}}; !slices.Equal(nums, want) {
		t.Errorf("line numbers %v, want %v", nums, want)
	}
}

func TestPrettySchema(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"object, keys sorted":   {`{"b":1,"a":1.50}`, "{\n  \"a\": 1.50,\n  \"b\": 1\n}\n"},
		"JSON string of JSON":   {`"{\"type\":\"record\"}"`, "{\n  \"type\": \"record\"\n}\n"},
		"plain string":          {`"int"`, "\"int\"\n"},
		"not JSON, shown as is": {`{oops`, "{oops\n"},
	} {
		if got := prettySchema(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
