package cli

import (
	"context"
	"flag"

	"github.com/eventlogging/eventlogging/internal/role"
)

// servingFlags are the intake's key flags; standalone declares the same
// ones, its --listen with its own default.
var servingFlags = []keyFlag{flagBrokers, flagSchemas, flagStreams, flagIntakeListen}

// watchFlag declares --watch.
func watchFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("watch", false, "reload the schema folder, the stream configuration and log.level when their files change (SIGHUP always reloads)")
}

func runIntake(ctx context.Context, args []string, e env) error {
	stderr, log, rt := e.stderr, e.log, e.reload
	fs := newFlagSet("intake", helpText("intake"), stderr)
	o := newOverlay(fs, "", append(servingFlags, flagSpoolDir)...)
	watch := watchFlag(fs)
	c, err := o.parse(args)
	if err != nil {
		return err
	}
	role.WarnSkipped(c, log)
	rt.ConfigPath, rt.Watch = o.config, *watch
	rl := role.NewReloader(c, rt, log)
	err = role.RunInOrder(ctx, rl, role.NewIntake(c, role.Deps{Logger: log, Reloader: rl}))
	return namePortInUse("intake", err, listenFlag{name: "listen", addr: c.Intake.Listen})
}
