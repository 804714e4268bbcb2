package compat

// RegistryCheck is the check as the registry calls it (registry.Config's
// Check): the level by name, and each violation as its text.
func RegistryCheck(schemaType, level, candidate string, existing []string) ([]string, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	viol, err := Check(schemaType, lvl, candidate, existing)
	if err != nil {
		return nil, err
	}
	msgs := make([]string, len(viol))
	for i, v := range viol {
		msgs[i] = v.String()
	}
	return msgs, nil
}
