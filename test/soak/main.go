// Command soak is the chaos soak of issue 32: `soak run` starts the roles
// of a multi-process deployment against the services scripts/soak.sh
// started (a three-node Kafka cluster, PostgreSQL, an S3 store), offers a
// steady load through both intakes while a seeded nemesis injects one
// fault at a time, and lets the pipeline drain; `soak check` then proves,
// event by event, that every acknowledged valid event is in PostgreSQL and
// in the Parquet files on S3 exactly once and every acknowledged invalid
// one is an EventError. scripts/soak.sh runs both.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: soak run|check [flags] (see scripts/soak.sh)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(ctx, os.Args[2:])
	case "check":
		err = checkCmd(ctx, os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, os.Args[1])
	}
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")
