package oauth_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// remote is a "remote" MCP server and authorization server: https at
// mcp.test and as.test, which the test's client dials on loopback, so
// that the Handler sees servers that are not on this machine.
type remote struct {
	as     *fakeAS
	rs     *fakeRS
	client *http.Client
}

func newRemote(t *testing.T) *remote {
	as := newFakeAS(t)
	as.name = "https://as.test"
	rs := newFakeRS(t, as)
	rs.name = "https://mcp.test"
	asTLS := httptest.NewTLSServer(as.srv.Config.Handler)
	t.Cleanup(asTLS.Close)
	rsTLS := httptest.NewTLSServer(rs.srv.Config.Handler)
	t.Cleanup(rsTLS.Close)
	names := map[string]string{"as.test:443": asTLS.Listener.Addr().String(), "mcp.test:443": rsTLS.Listener.Addr().String()}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own servers
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := names[addr]; ok {
				addr = to
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &remote{as: as, rs: rs, client: &http.Client{Transport: tr}}
}

// call is the test package's call, through the remote's client.
func (r *remote) call(ctx context.Context, h *oauth.Handler) error {
	return callWith(ctx, h, r.client, r.rs.url())
}

// TestRemoteServerCannotNameThisMachine: a server that is not on this
// machine names, in its discovery, a URL on this machine or its local
// network (a loopback, private or link-local address, localhost,
// 0.0.0.0): its challenge's resource_metadata, an
// authorization server, or an endpoint of its authorization server's
// metadata. Followed, the client (and, for the authorization endpoint,
// the user's browser) sends requests to services that listen only on
// this machine: a registration POST, a code and verifier. The control:
// the same remote servers, naming only themselves, log in; each row's
// local service gets nothing.
func TestRemoteServerCannotNameThisMachine(t *testing.T) {
	var local atomic.Int64
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local.Add(1)
		http.Error(w, "a local service", http.StatusTeapot)
	}))
	defer svc.Close()
	port := svc.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name string
		mod  func(r *remote)
		want string
	}{
		{"control: remote servers naming themselves", func(*remote) {}, ""},
		{"resource_metadata on this machine", func(r *remote) {
			r.rs.challenge = func(string) string { return `Bearer resource_metadata="` + svc.URL + `/x"` }
		}, "resource_metadata"},
		{"authorization server on this machine", func(r *remote) {
			r.rs.prm = func(base string) any {
				return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{svc.URL}}
			}
		}, "the authorization server"},
		{"registration endpoint on localhost", func(r *remote) {
			r.as.meta["registration_endpoint"] = fmt.Sprintf("http://localhost:%d/containers/create", port)
		}, "registration_endpoint"},
		{"token endpoint on 0.0.0.0 over https", func(r *remote) {
			r.as.meta["token_endpoint"] = fmt.Sprintf("https://0.0.0.0:%d/token", port)
		}, "token_endpoint"},
		{"token endpoint on a private address", func(r *remote) {
			r.as.meta["token_endpoint"] = "https://192.168.0.1/token"
		}, "token_endpoint"},
		{"revocation endpoint on the cloud metadata address", func(r *remote) {
			r.as.meta["revocation_endpoint"] = "https://169.254.169.254/revoke"
		}, "revocation_endpoint"},
		{"authorization endpoint on this machine", func(r *remote) {
			r.as.meta["authorization_endpoint"] = svc.URL + "/authorize"
		}, "authorization_endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local.Store(0)
			r := newRemote(t)
			tc.mod(r)
			opened := 0
			lb := &oauth.Loopback{Open: func(ctx context.Context, authURL string) error {
				opened++
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
				resp, err := r.client.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return nil
			}}
			defer lb.Close()
			h, err := oauth.New(oauth.Config{Server: r.rs.url(), Authorizer: lb, HTTPClient: r.client})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err = r.call(ctx, h)
			if tc.want == "" {
				if err != nil || r.rs.okays != 1 {
					t.Fatalf("control: %v, %d served", err, r.rs.okays)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "on this machine or its local network") {
				t.Errorf("error %v, want a refusal of the %s on this machine", err, tc.want)
			}
			if n := local.Load(); n != 0 {
				t.Errorf("the local service got %d requests", n)
			}
			if opened != 0 {
				t.Errorf("the user agent was sent %d times", opened)
			}
		})
	}
}
