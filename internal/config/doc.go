// Package config loads the one YAML configuration file of every role, applies
// defaults and EVENTLOGGING_* environment overrides, and validates it.
package config
