package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// fakeNATS is a NATS server on 127.0.0.1 that offers no TLS: it sends
// its INFO to each connection, answers PING, and reports each CONNECT
// line it receives and each connection the client ends.
type fakeNATS struct {
	ln       net.Listener
	connects chan string   // each CONNECT line, as it arrives
	ended    chan struct{} // one value per connection the client ended
}

func newFakeNATS(t *testing.T) *fakeNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNATS{ln: ln, connects: make(chan string, 64), ended: make(chan struct{}, 64)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second)) // a bound, not an assertion
				io.WriteString(c, `INFO {"server_id":"fake","version":"2.10.0","go":"go","host":"127.0.0.1","port":4222,"max_payload":1048576,"proto":1,"headers":true,"auth_required":true,"connect_urls":["10.9.8.7:4222"]}`+"\r\n")
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if strings.HasPrefix(line, "CONNECT") {
						f.connects <- line
					}
					if err != nil {
						break
					}
					if strings.HasPrefix(line, "PING") {
						io.WriteString(c, "PONG\r\n")
					}
				}
				f.ended <- struct{}{}
			}()
		}
	}()
	return f
}

// TestNATSCredentialsNotSentInClear: a --nats URL carrying credentials
// (nats://USER:PASSWORD@HOST, nats://TOKEN@HOST) to another machine sent
// them in the CONNECT line over plain TCP whenever the server (or
// whoever answers in its place) offered no TLS: the NATS client upgrades
// only when the server asks. And the servers a cluster's INFO names
// (connect_urls) inherit the credentials of the URL connected to, so
// even a loopback URL's credentials followed gossip to another machine.
// Like a plugin entry's headers over plain http, a credential never
// crosses the network in clear: such a URL is refused before any
// connection (use tls://), a tls:// URL's client hangs up on a server
// without TLS before sending anything, and a loopback URL's client
// ignores the servers the cluster names. The host is made "another
// machine" with a dialer that takes the connection to the fake server on
// loopback. The control: the same fake at 127.0.0.1 (this machine:
// nothing crosses a network) receives the password, so the fake would
// have seen it; before the fix the first two rows' CONNECT carried it,
// and the control's client added 10.9.8.7 with the password.
func TestNATSCredentialsNotSentInClear(t *testing.T) {
	const password = "s3cret-nats-password"
	for _, c := range []struct {
		name, url string
		refused   bool // by natsConnect, before any connection
		remote    bool
	}{
		{"user and password to another machine", "nats://alice:" + password + "@nats.example.net:4222", true, true},
		{"token to another machine", "nats://" + password + "@nats.example.net:4222", true, true},
		{"websocket to another machine", "ws://alice:" + password + "@nats.example.net:8080", true, true},
		{"one of several servers", "nats://127.0.0.1:4222,nats://alice:" + password + "@nats.example.net:4222", true, true},
		{"tls to another machine", "tls://alice:" + password + "@nats.example.net:4222", false, true},
		{"control: this machine", "nats://alice:" + password + "@127.0.0.1:4222", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeNATS(t)
			dialer := redirectDialer{to: f.ln.Addr().String()}
			nc, err := natsConnect(c.url, "test", nats.SetCustomDialer(dialer))
			if c.refused {
				if err == nil {
					nc.Close()
					t.Fatal("connected")
				}
				if !strings.Contains(err.Error(), "tls://") || strings.Contains(err.Error(), password) {
					t.Errorf("the error: %v", err)
				}
				select {
				case line := <-f.connects:
					t.Errorf("sent %q", line)
				default:
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			// Wait for the client's CONNECT, or for it to hang up twice
			// (it tried, and tried again) without one.
			for hangups := 0; hangups < 2; {
				select {
				case line := <-f.connects:
					if c.remote {
						t.Errorf("the client sent CONNECT over plain TCP: %q", line)
						return
					}
					if !strings.Contains(line, password) {
						t.Errorf("control: the client's CONNECT to this machine has no credential: %q", line)
					}
					if err := nc.FlushTimeout(20 * time.Second); err != nil { // connected: the INFO is read
						t.Fatal(err)
					}
					if d := nc.DiscoveredServers(); len(d) > 0 {
						t.Errorf("the client took the servers the cluster names, with the credential: %q", d)
					}
					return
				case <-f.ended:
					hangups++
				case <-time.After(20 * time.Second): // a bound on a hang, not a measurement
					t.Fatal("the client neither connected nor hung up")
				}
			}
			if !c.remote {
				t.Errorf("control: the client hung up on this machine's server without sending CONNECT")
			}
		})
	}
}

// redirectDialer dials to instead of the address asked for.
type redirectDialer struct{ to string }

func (d redirectDialer) Dial(network, _ string) (net.Conn, error) {
	return net.DialTimeout(network, d.to, 5*time.Second)
}

// TestNATSApprovalsCredentialsNotSentInClear: the approvals store's own
// connection (clawtool approvals --nats, a worker's policy) holds to the
// same rule as natsConnect: refused before any connection.
func TestNATSApprovalsCredentialsNotSentInClear(t *testing.T) {
	n := &natsApprovals{url: "nats://alice:s3cret@nats.example.net:4222"}
	defer n.close()
	if _, err := n.store(t.Context()); err == nil || !strings.Contains(err.Error(), "tls://") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("got %v, want the URL refused, saying to use tls://", err)
	}
}
