package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// allowFixture stands in for the network of a container under an allow
// list, on loopback only: the proxy's test resolver maps listed.test and
// unlisted.test to documentation addresses (TEST-NET-3), and its test
// dialer maps those to two local HTTP servers, counting their requests.
type allowFixture struct {
	listed, unlisted *httptest.Server
	hits             map[string]*atomic.Int64
}

var (
	fxListedIP   = netip.MustParseAddr("203.0.113.10")
	fxUnlistedIP = netip.MustParseAddr("203.0.113.20")
)

func newAllowFixture(t *testing.T) *allowFixture {
	f := &allowFixture{hits: map[string]*atomic.Int64{"listed": {}, "unlisted": {}}}
	serve := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.hits[name].Add(1)
			fmt.Fprint(w, "hello from "+name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	f.listed, f.unlisted = serve("listed"), serve("unlisted")
	return f
}

func (f *allowFixture) configure(p *sandbox.Proxy) {
	p.Rules = nil // must not matter: the policy's list applies
	p.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "listed.test":
			return []netip.Addr{fxListedIP}, nil
		case "unlisted.test":
			return []netip.Addr{fxUnlistedIP}, nil
		}
		return nil, errors.New("no such test name")
	}
	p.Dial = func(ctx context.Context, a netip.AddrPort) (net.Conn, error) {
		var to *httptest.Server
		switch a.Addr() {
		case fxListedIP:
			to = f.listed
		case fxUnlistedIP:
			to = f.unlisted
		default:
			return nil, errors.New("the test dialer reaches only the test servers")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to.Listener.Addr().String())
	}
}

// port is the loopback port of s on the host.
func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// TestContainerAllowList (rows N28-N33): a fresh container under an allow
// list reaches a listed name through the proxy outside it and nothing
// else; each refusal is in the Result with its reason, and the refused
// servers see no request. The direct rows have a control under the
// host's network, where the same command reaches the host's server: the
// check would see a leak.
func TestContainerAllowList(t *testing.T) {
	for _, mode := range []struct {
		name     string
		opts     Options
		fallback bool
	}{{"fresh", Options{}, false}, {"warm", Options{Warm: true}, true}} {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			f := newAllowFixture(t)
			allow := sandbox.Policy{Network: sandbox.NetworkAllow, Allow: []sandbox.HostRule{{Host: "listed.test", Ports: []int{80}}}}
			wget := func(url string, direct bool) []string {
				argv := []string{"busybox", "wget", "-q", "-O", "-"} // (-T crashes the test image's busybox)
				if direct {
					argv = append(argv, "-Y", "off")
				}
				return append(argv, url)
			}
			for _, tc := range []struct {
				row     string
				p       sandbox.Policy
				argv    []string
				ok      bool
				stdout  string
				reason  string // of the one denial expected
				servers string // which server may see a request
			}{
				{row: "N28 listed name", p: allow, argv: wget("http://listed.test/", false), ok: true, stdout: "hello from listed", servers: "listed"},
				{row: "N29 unlisted name", p: allow, argv: wget("http://unlisted.test/", false), reason: "not in the allow list"},
				{row: "N30 IP literal of the listed name", p: allow, argv: wget("http://203.0.113.10/", false), reason: "an IP literal not in the allow list"},
				{row: "N31 loopback literal", p: allow, argv: wget("http://127.0.0.1:"+port(f.unlisted)+"/", false), reason: "an IP literal not in the allow list"},
				{row: "N32 direct to the host's loopback server", p: allow, argv: wget("http://127.0.0.1:"+port(f.unlisted)+"/", true)},
				{row: "N33 direct to an address", p: allow, argv: wget("http://203.0.113.20/", true)},
				{row: "N32 control: host network", p: sandbox.Policy{Network: sandbox.NetworkHost}, argv: wget("http://127.0.0.1:"+port(f.unlisted)+"/", true), ok: true, stdout: "hello from unlisted", servers: "unlisted"},
			} {
				t.Run(tc.row, func(t *testing.T) {
					f.hits["listed"].Store(0)
					f.hits["unlisted"].Store(0)
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // ok-wallclock: a bound, not an assertion
					defer cancel()
					cmd := sandbox.CommandContext(ctx, tc.p, tc.argv[0], tc.argv[1:]...)
					cmd.Backend = c
					cmd.ConfigureProxy = f.configure
					err := cmd.Run()
					r := cmd.Result
					if r == nil {
						t.Fatalf("no result: %v", err)
					}
					if (err == nil) != tc.ok {
						t.Fatalf("run: %v (%s), want ok=%v; stderr %q", err, r.Summary(), tc.ok, r.Stderr)
					}
					if tc.stdout != "" && string(r.Stdout) != tc.stdout {
						t.Errorf("stdout %q, want %q", r.Stdout, tc.stdout)
					}
					for name, n := range f.hits {
						if got := n.Load(); (name == tc.servers) != (got > 0) {
							t.Errorf("server %s saw %d requests (allowed: %q)", name, got, tc.servers)
						}
					}
					switch {
					case tc.reason != "" && (len(r.NetworkDenials) != 1 || r.NetworkDenials[0].Reason != tc.reason || r.NetworkDenials[0].Client != "busybox"):
						t.Errorf("denials %+v, want one for busybox: %s", r.NetworkDenials, tc.reason)
					case tc.reason == "" && len(r.NetworkDenials) != 0:
						t.Errorf("denials %+v, want none", r.NetworkDenials)
					}
					if tc.p.Network == sandbox.NetworkAllow {
						if !slices.Contains(r.Layers, sandbox.LayerNetNS) {
							t.Errorf("layers %v: want %s", r.Layers, sandbox.LayerNetNS)
						}
						if r.Mode != sandbox.ModeFresh || (r.Fallback != "") != mode.fallback {
							t.Errorf("mode %s, fallback %q", r.Mode, r.Fallback)
						}
					}
				})
			}
		})
	}
}

// TestContainerAllowListCommand: under an allow list the command runs as
// the sandbox user without capabilities, with the proxy variables and
// without the forwarder's own; a missing command is an error.
func TestContainerAllowListCommand(t *testing.T) {
	c := requireEngine(t, false)
	p := sandbox.Policy{Network: sandbox.NetworkAllow, Allow: []sandbox.HostRule{{Host: "listed.test"}}, Env: []string{"A=1", "NO_PROXY=*"}}
	r, err := c.Run(t.Context(), p, []string{"sh", "-c", "id -u; id -g; grep ^Cap[EP] /proc/self/status; env | sort"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := string(r.Stdout)
	for _, want := range []string{"65534\n65534\n", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "A=1\n", "HTTP_PROXY=http://127.0.0.1:3128\n", "https_proxy=http://127.0.0.1:3128\n", "ALL_PROXY=http://127.0.0.1:3128\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"NO_PROXY", "CLAWTOOL_"} {
		if strings.Contains(out, not) {
			t.Errorf("output has %q:\n%s", not, out)
		}
	}
	if _, err := c.Run(t.Context(), p, []string{"no-such-command-xyz"}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing command: %v, want ErrNotExist", err)
	}
}

// TestContainerAllowListFailsClosed: when the forwarder cannot run in
// the container (here this program is not an ELF file), the run fails
// before any container starts and says why; the control is the same
// backend under network none, which runs.
func TestContainerAllowListFailsClosed(t *testing.T) {
	c := requireEngine(t, false)
	bogus := filepath.Join(t.TempDir(), "not-elf")
	must(t, os.WriteFile(bogus, []byte("#!/bin/sh\n"), 0o755))
	c.serverExe = bogus
	if r, err := c.Run(t.Context(), sandbox.Policy{}, []string{"true"}, nil); err != nil || !r.OK() {
		t.Fatalf("control: %v", err)
	}
	p := sandbox.Policy{Network: sandbox.NetworkAllow, Allow: []sandbox.HostRule{{Host: "listed.test"}}}
	r, err := c.Run(t.Context(), p, []string{"true"}, nil)
	if err == nil || r != nil || !strings.Contains(err.Error(), "network forwarder cannot run") {
		t.Fatalf("Run = %v, %v; want the refusal", r, err)
	}
}

// TestContainerStreams: RunCmd streams a long-running command's output
// while it runs: each line written to its input comes back before the
// next is sent, as an MCP server on stdio answers.
func TestContainerStreams(t *testing.T) {
	c := requireEngine(t, false)
	inR, inW, err := os.Pipe()
	must(t, err)
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // ok-wallclock: a bound
	defer cancel()
	cmd := sandbox.CommandContext(ctx, sandbox.Policy{}, "cat")
	cmd.Backend = c
	cmd.Stdin, cmd.Stdout = inR, outW
	done := make(chan error, 1)
	go func() { done <- cmd.Run(); outW.Close(); inR.Close() }()
	br := bufio.NewReader(outR)
	for i := range 3 {
		l := fmt.Sprintf("line %d\n", i)
		if _, err := io.WriteString(inW, l); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != l {
			t.Fatalf("read %q, %v; want %q", got, err, l)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(cmd.Result.Stdout) != 0 || cmd.Result.Outcome != sandbox.Exited {
		t.Errorf("result %+v: want no stdout kept and an exit", cmd.Result)
	}
}
