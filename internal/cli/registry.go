package cli

import (
	"context"

	"github.com/eventlogging/eventlogging/internal/role"
)

func runRegistry(ctx context.Context, args []string, e env) error {
	stderr, log := e.stderr, e.log
	fs := newFlagSet("registry", helpText("registry"), stderr)
	o := newOverlay(fs, "", flagBrokers, flagRegistryListen, flagSelfURL, flagImportDir)
	c, err := o.parse(args)
	if err != nil {
		return err
	}
	err = role.NewRegistry(c, role.Deps{Logger: log}).Run(ctx)
	return namePortInUse("registry", err, listenFlag{name: "listen", addr: c.Registry.Listen})
}
