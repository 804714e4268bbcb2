package capsule

// Flatten joins nested objects' keys with "_" (the original utils.flatten):
// {"event": {"a": {"b": 1}}} becomes {"event_a_b": 1}. Arrays and scalars are
// kept as values.
func Flatten(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	flattenInto(out, "", m)
	return out
}

func flattenInto(out map[string]any, prefix string, m map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "_" + k
		}
		if sub, ok := v.(map[string]any); ok {
			flattenInto(out, key, sub)
			continue
		}
		out[key] = v
	}
}
