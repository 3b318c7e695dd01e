package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the bytes the server reads from its accepted
// connections: what the proxy took in, whatever it kept of it.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.read}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// TestProxyHeaderBytes (N28): a sandboxed program that sends a request
// line or headers without end, fast enough to finish inside the header
// timeout, is cut off at the header bound: the proxy runs on the host,
// outside the run's memory limit, and an unbounded read would hold all of
// it. The control: a request whose headers are just under the bound is
// served.
func TestProxyHeaderBytes(t *testing.T) {
	const sent = 16 << 20 // far past the bound, within the header timeout on loopback
	for _, tc := range []struct{ name, head, filler string }{
		{"request line", "GET http://listed.test/", "a"},
		{"one header", "GET http://listed.test/ HTTP/1.1\r\nX-Pad: ", "a"},
		{"many headers", "GET http://listed.test/ HTTP/1.1\r\n", "X-Pad: a\r\n"},
		{"CONNECT line", "CONNECT listed.test:80", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newProxyFixture(t, &Proxy{Rules: testRules(), HeaderTimeout: time.Minute})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cl := &countingListener{Listener: l}
			go f.proxy.Serve(cl)
			t.Cleanup(func() { l.Close() })
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			wrote := make(chan int64, 1)
			go func() {
				var n int64
				w := bufio.NewWriterSize(c, 64<<10)
				io.WriteString(w, tc.head)
				chunk := strings.Repeat(tc.filler, (32<<10)/len(tc.filler))
				for n < sent {
					m, err := io.WriteString(w, chunk)
					n += int64(m)
					if err != nil {
						break
					}
				}
				w.Flush()
				wrote <- n
			}()
			// The proxy answers (431) or closes; either way the read ends.
			resp, rerr := http.ReadResponse(bufio.NewReader(c), nil)
			c.Close()
			<-wrote
			if rerr == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
					t.Fatalf("status %d, want 431", resp.StatusCode)
				}
			}
			if got := cl.read.Load(); got > 2*maxProxyHeaderBytes {
				t.Fatalf("the proxy read %d bytes of headers, want at most about %d", got, maxProxyHeaderBytes)
			}
			if d, _ := f.proxy.Denials(); len(d) != 1 || !strings.Contains(d[0].Reason, "request headers over") {
				t.Fatalf("denials = %+v, want the oversized request", d)
			}
			if f.listedHits.Load() != 0 {
				t.Fatalf("the listed server was reached by an oversized request")
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		f := newProxyFixture(t, &Proxy{Rules: testRules()})
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		pad := strings.Repeat("a", maxProxyHeaderBytes-1024)
		fmt.Fprintf(c, "GET http://listed.test/ HTTP/1.1\r\nX-Pad: %s\r\n\r\n", pad)
		if code, body := readResponse(t, c); code != 200 || body != "listed listed.test" {
			t.Fatalf("headers under the bound: %d %q, want the listed server", code, body)
		}
	})
}

// TestProxyDenialHostBounded (N31): a target of tens of kilobytes (within
// the header bound, but no host name can be that long) is kept in the
// denial, the log and Result.NetworkDenials as a short prefix with its
// length, so 256 denials cannot carry megabytes into a tool's result.
// The control: a short target is kept whole.
func TestProxyDenialHostBounded(t *testing.T) {
	f := newProxyFixture(t, &Proxy{Rules: testRules()})
	long := strings.Repeat("a", 60<<10)
	for _, target := range []string{"unlisted.test:80", long + ":80", long} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		c.Close()
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("CONNECT %.20s...: %v %v, want 403", target, resp, err)
		}
	}
	d, _ := f.proxy.Denials()
	if len(d) != 3 {
		t.Fatalf("denials = %d, want 3", len(d))
	}
	if d[0].Host != "unlisted.test" {
		t.Errorf("control: host %q, want unlisted.test whole", d[0].Host)
	}
	for _, x := range d[1:] {
		if len(x.Host) > 2*maxDenialHost || !strings.Contains(x.Host, "bytes") {
			t.Errorf("denial host of %d bytes (%.40q...), want a prefix of about %d with the length", len(x.Host), x.Host, maxDenialHost)
		}
	}
}

// TestProxyDenialLogBounded: the proxy runs on the host, and a command
// that opens denied connections in a loop wrote one warning to the host's
// log per connection, as fast as it connected, for as long as it ran.
// Every refusal is still answered 403 and counted (the control: Denials
// keeps MaxNetworkDenials and counts the rest), but the log gets one
// record per kept denial and one saying the rest are counted.
func TestProxyDenialLogBounded(t *testing.T) {
	var records atomic.Int64
	var mu sync.Mutex
	var last string
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		records.Add(1)
		mu.Lock()
		last = string(b)
		mu.Unlock()
		return len(b), nil
	}), nil))
	f := newProxyFixture(t, &Proxy{Rules: testRules(), Client: "flood", Log: log})
	const n = MaxNetworkDenials + 50
	for i := range n {
		if code, _ := f.connect(t, "unlisted.test:80"); code != http.StatusForbidden {
			t.Fatalf("denial %d answered %d, want 403", i, code)
		}
	}
	kept, dropped := f.proxy.Denials()
	if len(kept) != MaxNetworkDenials || dropped != n-MaxNetworkDenials {
		t.Fatalf("control: %d denials kept, %d dropped; want %d and %d", len(kept), dropped, MaxNetworkDenials, n-MaxNetworkDenials)
	}
	if got := records.Load(); got != MaxNetworkDenials+1 {
		t.Errorf("%d log records for %d denials, want %d (one per kept denial and one for the rest)", got, n, MaxNetworkDenials+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(last, "counted") || !strings.Contains(last, "client=flood") {
		t.Errorf("last record %q, want the one saying the rest are counted", last)
	}
	if f.unlistHits.Load() != 0 {
		t.Error("the unlisted server was reached")
	}
}
