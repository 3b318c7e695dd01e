// Package natstest runs embedded NATS servers for tests, as
// net/http/httptest runs HTTP servers: each on a loopback port of its
// own, shut down when the test ends.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Run starts an embedded NATS server with opts, waits up to 20 seconds
// for it to take connections (failing the test if it does not), and
// shuts it down when the test ends. An empty Host is 127.0.0.1 and a
// zero Port a free one; the server never logs and leaves signals alone.
func Run(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = -1
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Start runs a server as [Run] does, with JetStream keeping its files in
// a folder of the test's when jetStream is set.
func Start(t testing.TB, jetStream bool) *server.Server {
	t.Helper()
	opts := &server.Options{JetStream: jetStream}
	if jetStream {
		opts.StoreDir = t.TempDir()
	}
	return Run(t, opts)
}

// Connect connects to s, reconnecting without end, and closes the
// connection when the test ends.
func Connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
