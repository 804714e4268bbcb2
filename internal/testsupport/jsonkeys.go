package testsupport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DuplicateKeys returns the keys that appear more than once in one JSON
// object of line, at any depth ("a.b" for a key b inside a); an error when
// line is not exactly one JSON object.
func DuplicateKeys(line []byte) ([]string, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		return nil, fmt.Errorf("not a JSON object: %q", line)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var dups []string
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := path + k.(string)
				if seen[key] {
					dups = append(dups, key)
				}
				seen[key] = true
				if err := walk(key + "."); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(path); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the object")
	}
	return dups, nil
}
