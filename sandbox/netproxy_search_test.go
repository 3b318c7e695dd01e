package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// searchResolver stands for a host resolver with the search list
// "corp.test" and ndots:5 (a cluster's usual resolv.conf): a name
// without a trailing dot is tried with the search domain first, then as
// it is; a name with a trailing dot is tried only as it is, as the Go
// and C resolvers do. Its zone has only names under corp.test, which
// resolve to the unlisted server's address (a public one: a company's
// hosts need not be in a private range), and the listed name.
type searchResolver struct {
	mu    sync.Mutex
	asked []string
}

var searchZone = map[string][]netip.Addr{
	"api.corp.test":              {unlistedIP},
	"www.example.test.corp.test": {unlistedIP},
	"listed.test":                {listedIP},
}

func (r *searchResolver) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, host)
	r.mu.Unlock()
	name, rooted := strings.CutSuffix(host, ".")
	if !rooted {
		if a, ok := searchZone[name+".corp.test"]; ok {
			return a, nil
		}
	}
	if a, ok := searchZone[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestProxyNoSearchDomains is rows N43 and N44: the proxy resolves a
// listed name with the resolver of the host it runs on (Resolve nil;
// searchResolver stands in at the call into net.DefaultResolver), whose search
// domains would turn "api" (a rule naming a single label) or
// "www.example.test" (a name that does not resolve as it is) into a
// company's internal host, api.corp.test: the run reached a host no rule
// names. The proxy asks for the name fully qualified (a trailing dot),
// so no search domain applies and the name does not resolve. The
// control is the listed name, reached, asked with its trailing dot.
func TestProxyNoSearchDomains(t *testing.T) {
	rows := []struct{ id, target string }{
		{"N43", "api:80"},
		{"N44", "www.example.test:443"},
	}
	for _, r := range rows {
		t.Run(r.id, func(t *testing.T) {
			p := &Proxy{Rules: []HostRule{{Host: "listed.test", Ports: []int{80}}, {Host: "api", Ports: []int{80}},
				{Host: "www.example.test"}}, Client: "attacker " + r.id}
			f := newProxyFixture(t, p)
			var res searchResolver
			p.Resolve, p.lookup = nil, res.resolve // the system resolver's path
			if code, body := f.connect(t, "listed.test:80"); code != 200 || !strings.HasPrefix(body, "listed") {
				t.Fatalf("control: CONNECT listed.test:80 = %d %q, want the listed server", code, body)
			}
			code, body := f.connect(t, r.target)
			if code != http.StatusForbidden {
				t.Fatalf("CONNECT %s = %d %q, want 403: a search domain made it another host", r.target, code, body)
			}
			if n := f.unlistHits.Load(); n != 0 {
				t.Errorf("the host the search domain named got %d requests", n)
			}
			d, _ := p.Denials()
			if len(d) != 1 || !strings.Contains(d[0].Reason, "does not resolve") {
				t.Errorf("denials = %+v, want one saying the name does not resolve", d)
			}
			res.mu.Lock()
			defer res.mu.Unlock()
			for _, h := range res.asked {
				if !strings.HasSuffix(h, ".") {
					t.Errorf("the resolver was asked %q, not fully qualified", h)
				}
			}
		})
	}
}

// TestProxySingleLabel: a name of one label is refused unless a rule
// names it exactly: "*.test" does not cover "test", so the name is not
// even resolved (where a search domain would make it a host of its own).
func TestProxySingleLabel(t *testing.T) {
	p := &Proxy{Rules: []HostRule{{Host: "listed.test", Ports: []int{80}}, {Host: "*.test", Ports: []int{80}}}}
	f := newProxyFixture(t, p)
	var res searchResolver
	p.Resolve, p.lookup = nil, res.resolve
	if code, body := f.connect(t, "listed.test:80"); code != 200 || !strings.HasPrefix(body, "listed") {
		t.Fatalf("control: CONNECT listed.test:80 = %d %q, want the listed server", code, body)
	}
	for _, target := range []string{"test:80", "api:80", "API.:80"} {
		if code, body := f.connect(t, target); code != http.StatusForbidden || !strings.Contains(body, "not in the allow list") {
			t.Errorf("CONNECT %s = %d %q, want 403 not in the allow list", target, code, body)
		}
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if len(res.asked) != 1 {
		t.Errorf("the resolver was asked %q, want only the control's name", res.asked)
	}
}
