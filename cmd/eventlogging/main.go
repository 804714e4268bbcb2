// Command eventlogging runs every role of the EventLogging pipeline: one
// binary, one subcommand per role. The commands are in internal/cli, the
// roles in internal/role.
package main

import (
	"os"

	"github.com/eventlogging/eventlogging/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	cli.Version = version
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
