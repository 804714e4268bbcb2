package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// maxYAMLDepth bounds nesting (and alias expansion) when converting YAML.
const maxYAMLDepth = 128

// ParseDocument decodes a raw schema document, JSON or YAML, into the value
// model the validator uses: map[string]any, []any, json.Number, string,
// bool and nil. JSON is recognised by a leading '{'; anything else is read
// as YAML. The top level must be an object. Errors wrap [ErrInvalidSchema].
func ParseDocument(raw []byte) (map[string]any, error) {
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(raw)
	var (
		v   any
		err error
	)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		v, err = decodeJSON(trimmed)
		if err != nil && !errors.Is(err, errTrailingData) {
			// Not JSON; a YAML flow mapping also starts with '{'.
			if yv, yerr := decodeYAML(raw); yerr == nil {
				v, err = yv, nil
			}
		}
	} else {
		v, err = decodeYAML(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decode: %w", ErrInvalidSchema, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: top level is %s, want object", ErrInvalidSchema, JSONKind(v))
	}
	return doc, nil
}

var errTrailingData = errors.New("trailing data after the JSON document")

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailingData
	}
	return v, nil
}

func decodeYAML(b []byte) (any, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	if root.Kind == 0 {
		return nil, errors.New("empty document")
	}
	budget := maxYAMLNodes
	return yamlValue(&root, 0, &budget)
}

// maxYAMLNodes bounds the nodes a YAML document may expand to: aliases can
// make a few lines expand exponentially (a "billion laughs" document).
const maxYAMLNodes = 100_000

// yamlValue converts a YAML node to the JSON value model, keeping numbers
// as json.Number.
func yamlValue(n *yaml.Node, depth int, budget *int) (any, error) {
	if depth > maxYAMLDepth {
		return nil, errors.New("yaml: nesting too deep")
	}
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("yaml: the document expands to more than %d nodes (nested aliases?)", maxYAMLNodes)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, errors.New("yaml: want exactly one document")
		}
		return yamlValue(n.Content[0], depth+1, budget)
	case yaml.AliasNode:
		return yamlValue(n.Alias, depth+1, budget)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("yaml: line %d: merge keys are not supported", k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("yaml: line %d: mapping key must be a scalar", k.Line)
			}
			val, err := yamlValue(v, depth+1, budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = val
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	default:
		return nil, fmt.Errorf("yaml: line %d: unsupported node", n.Line)
	}
}

func yamlScalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, err
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		var u uint64
		if err := n.Decode(&u); err != nil {
			return nil, fmt.Errorf("yaml: line %d: integer %q out of range", n.Line, n.Value)
		}
		return json.Number(strconv.FormatUint(u, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("yaml: line %d: %q is not a JSON number", n.Line, n.Value)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case "!!str", "!!timestamp":
		return n.Value, nil
	default:
		return nil, fmt.Errorf("yaml: line %d: unsupported tag %s", n.Line, n.ShortTag())
	}
}
