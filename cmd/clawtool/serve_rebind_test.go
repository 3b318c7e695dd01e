package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// rebindCall is the request a page of http://NAME:8080 makes once NAME
// resolves to this machine's network address, 192.0.2.10 (DNS
// rebinding): to the browser the request is of the page's own origin.
// It reaches a listener on that address (not loopback), which the
// request's context says as net/http's would.
func rebindCall(name string) *http.Request {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"touch","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"page","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	r := httptest.NewRequest(http.MethodPost, "http://"+name+":8080/mcp", strings.NewReader(body))
	local := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8080}
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
	r.Header.Set("Origin", "http://"+name+":8080")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "touch")
	return r
}

// TestServeRefusesRebindingOnOpenAddress: serve --http on an address
// that is not loopback, without authentication (which it warns about:
// whoever reaches the address may call every tool), had go-sdk's DNS
// rebinding check off, since that check guards loopback listeners only.
// A web page anywhere on the internet, whose name its DNS server then
// answers with the machine's address, called tools as the same origin:
// the warning's "anyone who can reach it" became anyone whose page the
// user opens. The control: the server without serve's Host guard runs
// the page's call. With the guard, the page's Host (a name that is not
// localhost, not an IP address, not given with --allow-host) gets 403
// and nothing runs; an IP address, localhost and an --allow-host name
// still pass.
func TestServeRefusesRebindingOnOpenAddress(t *testing.T) {
	var ran atomic.Int64
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("touch", "Counts its calls.", func(context.Context, struct{}) (string, error) {
		ran.Add(1)
		return "touched", nil
	})))
	srv := mcptool.NewServer(r)
	defer srv.Close()

	w := httptest.NewRecorder()
	srv.ServeHTTP(w, rebindCall("evil.example"))
	if w.Code != http.StatusOK || ran.Load() != 1 {
		t.Fatalf("control: the page's call without the guard: %d %q, %d ran; the attack did not work", w.Code, w.Body, ran.Load())
	}

	guarded := guardHosts(srv, []string{"mcp.lan"})
	for _, name := range []string{"evil.example", "EVIL.example.", "localhost.evil.example", "127.0.0.1.evil.example", "mcp.lan.evil.example"} {
		w := httptest.NewRecorder()
		guarded.ServeHTTP(w, rebindCall(name))
		body, _ := io.ReadAll(w.Body)
		if w.Code != http.StatusForbidden || !strings.Contains(string(body), "--allow-host") {
			t.Errorf("Host %s: %d %q, want 403 naming --allow-host", name, w.Code, body)
		}
	}
	if ran.Load() != 1 {
		t.Fatalf("the guarded calls ran %d times", ran.Load()-1)
	}
	for _, name := range []string{"192.0.2.10", "localhost", "MCP.lan."} {
		w := httptest.NewRecorder()
		guarded.ServeHTTP(w, rebindCall(name))
		if w.Code != http.StatusOK {
			t.Errorf("control: Host %s: %d %q", name, w.Code, w.Body)
		}
	}

	// serve --http puts the guard before the endpoint: on its loopback
	// listener go-sdk refuses such a Host too, but the guard's answer
	// comes first.
	addr := startHTTP(t)
	req := rebindCall("evil.example")
	req.RequestURI, req.URL.Scheme, req.URL.Host = "", "http", addr
	resp, err := http.DefaultClient.Do(req.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "--allow-host") {
		t.Errorf("serve --http, Host evil.example: %d %q, want serve's 403", resp.StatusCode, body)
	}
}
