package inspect

import (
	"bytes"
	"testing"
)

func TestWriteValue(t *testing.T) {
	cases := []struct {
		value  []byte
		pretty bool
		want   string
	}{
		{[]byte(`{ "a" : [1, 2] , "b":"<x>" }`), false, `{"a":[1,2],"b":"<x>"}` + "\n"},
		{[]byte(`{"a":[1,2]}`), true, "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"},
		{[]byte(`42`), false, "42\n"},
		{[]byte("plain <text>\twith \"quotes\""), false, `"plain <text>\twith \"quotes\""` + "\n"},
		{[]byte("\xff\xfe"), false, `"\ufffd\ufffd"` + "\n"},
		{[]byte{}, false, `""` + "\n"},
		{nil, false, "null\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		writeValue(&b, c.value, c.pretty)
		if b.String() != c.want {
			t.Errorf("writeValue(%q, %v) = %q, want %q", c.value, c.pretty, b.String(), c.want)
		}
	}
}
