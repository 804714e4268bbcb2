package capsule

// CanaryDomain marks canary events: the webHost of a legacy capsule, the
// meta.domain of an Event Platform event (Wikimedia's convention). The
// intake produces them periodically; sinks count them and do not store them.
const CanaryDomain = "canary"

// CanaryStream reports whether value (a capsule or Event Platform event as
// JSON) is a canary, and its stream: the schema name of a legacy capsule,
// meta.stream of an Event Platform event.
func CanaryStream(value []byte) (string, bool) {
	v, err := Decode(value)
	if err != nil {
		return "", false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	if meta, ok := m["meta"].(map[string]any); ok {
		if d, _ := meta["domain"].(string); d == CanaryDomain {
			s, ok := meta["stream"].(string)
			return s, ok && s != ""
		}
		return "", false
	}
	if h, _ := m["webHost"].(string); h == CanaryDomain {
		s, ok := m["schema"].(string)
		return s, ok && s != ""
	}
	return "", false
}
