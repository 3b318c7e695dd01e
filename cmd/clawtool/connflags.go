package main

import (
	"flag"
	"net"

	"github.com/miniopenclaw/tool/internal/connlimit"
)

// Default bounds of the connections serve --http and inspect hold open.
const (
	defaultMaxConns        = 4096
	defaultMaxConnsPerHost = 256
)

// connFlags are --max-conns and --max-conns-per-host.
type connFlags struct{ total, perHost int }

func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.IntVar(&c.total, "max-conns", defaultMaxConns, "hold at most `N` connections open; one past it is closed at once (0: no bound)")
	fs.IntVar(&c.perHost, "max-conns-per-host", defaultMaxConnsPerHost, "hold at most `N` connections open from one IP address; one past it is closed at once (0: no bound)")
	return c
}

// listen listens on addr (TCP) within the bounds.
func (c *connFlags) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return connlimit.New(ln, c.total, c.perHost), nil
}
