package cli

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// A listenFlag is a flag of an address a command listens on, and the
// address it was given (or its key's value).
type listenFlag struct {
	name, addr string
	// other is who else may hold the address, e.g. "another eventlogging
	// standalone?".
	other string
}

// namePortInUse is err, a command's, saying which flag chose the address
// when the command could not listen because the address is in use, e.g.
// "standalone: --listen 127.0.0.1:8080: address already in use (another
// eventlogging standalone?): choose another with --listen". Another error
// is returned as it is.
func namePortInUse(cmd string, err error, flags ...listenFlag) error {
	var op *net.OpError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &op) || op.Op != "listen" || op.Addr == nil {
		return err
	}
	f, ok := flagOfAddr(op.Addr, flags)
	if !ok {
		return err
	}
	other := f.other
	if other == "" {
		other = "another eventlogging " + cmd + "?"
	}
	return fmt.Errorf("%s: --%s %s: %w (%s): choose another with --%s", cmd, f.name, f.addr, syscall.EADDRINUSE, other, f.name)
}

// flagOfAddr is the flag whose address the listener tried: the one that
// resolves to it, else the only one of its port.
func flagOfAddr(tried net.Addr, flags []listenFlag) (listenFlag, bool) {
	ta, ok := tried.(*net.TCPAddr)
	if !ok {
		return listenFlag{}, false
	}
	var samePort []listenFlag
	for _, f := range flags {
		a, err := net.ResolveTCPAddr("tcp", f.addr)
		if err != nil {
			continue
		}
		if a.String() == ta.String() {
			return f, true
		}
		if a.Port == ta.Port {
			samePort = append(samePort, f)
		}
	}
	if len(samePort) == 1 {
		return samePort[0], true
	}
	return listenFlag{}, false
}
