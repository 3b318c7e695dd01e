package natstest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestStart: a server with JetStream takes a connection and answers for
// its JetStream account; one without says it has none. Both listen on
// the loopback address only.
func TestStart(t *testing.T) {
	for _, js := range []bool{true, false} {
		s := Start(t, js)
		host, _, err := net.SplitHostPort(s.Addr().String())
		if err != nil || host != "127.0.0.1" {
			t.Errorf("listens on %v (%v), want 127.0.0.1", s.Addr(), err)
		}
		jsc, err := jetstream.New(Connect(t, s))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = jsc.AccountInfo(ctx)
		cancel()
		if (err == nil) != js {
			t.Errorf("JetStream %v: account info error %v", js, err)
		}
	}
}
