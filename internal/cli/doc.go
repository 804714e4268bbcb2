// Package cli is the eventlogging command line: each command's flags,
// laid over the configuration (one flag per configuration key, declared
// once in flags.go), then the roles of internal/role built from it and
// run. cmd/eventlogging's main calls Run.
package cli
