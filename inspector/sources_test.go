package inspector

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/google/go-cmp/cmp"
)

// TestSources checks GET /api/sources: what WithSources lists, at the
// moment of the request, cut imports with their counts; an empty list
// without it, and the token is needed as for every request.
func TestSources(t *testing.T) {
	cut := Source{Name: "big", Kind: "mcp", State: "ready", Tools: 1000, MaxTools: 1000, LeftOut: 500,
		Error: `500 tools left out: the server lists more than its cap of 1000 tools (raise it with "maxTools" in its entry, up to 100000)`}
	list := []Source{{Name: "files", Kind: "mcp", State: "ready", Tools: 3},
		{Name: "fetch", Kind: "mcp", State: "ready", Tools: 1, Confinement: "native", Network: "allow", Allow: []string{"api.example.com"},
			Secrets: []string{"GITHUB_TOKEN"}, NetworkDenials: []string{"169.254.169.254 port 80: an IP literal not in the allow list"}, NetworkDenied: 1}}
	h := New(testRegistry(t), WithToken(testToken), WithSources(func() []Source { return list }))
	get := func(h *Handler) []Source {
		t.Helper()
		w := do(h, "GET", "/api/sources", "", apiHeaders)
		var got []Source
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil {
			t.Fatalf("GET /api/sources: %d %s", w.Code, w.Body.String())
		}
		return got
	}
	if diff := cmp.Diff(list, get(h)); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	list = append(list, cut) // a later request sees the change
	if diff := cmp.Diff(list, get(h)); diff != "" {
		t.Errorf("sources after a change (-want +got):\n%s", diff)
	}
	w := do(h, "GET", "/api/sources", "", apiHeaders)
	if want := `"left_out":500`; !json.Valid(w.Body.Bytes()) || !contains(w.Body.String(), want) || !contains(w.Body.String(), `"max_tools":1000`) {
		t.Errorf("GET /api/sources = %s, want the cut's fields", w.Body.String())
	}
	for _, want := range []string{`"confinement":"native"`, `"network":"allow"`, `"allow":["api.example.com"]`, `"secrets":["GITHUB_TOKEN"]`, `"network_denials":["169.254.169.254 port 80`, `"network_denied":1`} {
		if !contains(w.Body.String(), want) {
			t.Errorf("GET /api/sources = %s, want %s", w.Body.String(), want)
		}
	}
	if got := get(New(testRegistry(t), WithToken(testToken))); got == nil || len(got) != 0 {
		t.Errorf("without WithSources: %v, want []", got)
	}
	if w := do(h, "GET", "/api/sources", "", map[string]string{"Origin": "http://127.0.0.1:7777"}); w.Code != 403 {
		t.Errorf("without the token: %d, want 403", w.Code)
	}
	if w := do(h, "GET", "/api/access", "", apiHeaders); w.Body.String() != "{\"approvals\":false,\"audit\":false,\"call_as\":false,\"sources\":true}\n" {
		t.Errorf("access with WithSources: %s", w.Body.String())
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestBrowserSources drives the page's Sources tab: it appears with
// WithSources, flags the cut sources and those refused the network, and
// shows the cut's count and reason, a confined source's network policy,
// the names of its secrets and its denials.
func TestBrowserSources(t *testing.T) {
	exe := chromium(t)
	h := New(testRegistry(t), WithSources(func() []Source {
		return []Source{
			{Name: "files", Kind: "mcp", State: "ready", Tools: 3},
			{Name: "big", Kind: "mcp", State: "ready", Tools: 1000, MaxTools: 1000, LeftOut: 500,
				Error: `500 tools left out: the server lists more than its cap of 1000 tools (raise it with "maxTools" in its entry, up to 100000)`},
			{Name: "zfetch", Kind: "mcp", State: "ready", Tools: 1, Confinement: "native", Network: "allow", Allow: []string{"api.example.com", "*.example.org:443"},
				Secrets: []string{"GITHUB_TOKEN", "NPM_TOKEN"}, NetworkDenials: []string{"169.254.169.254 port 80: an IP literal not in the allow list"}, NetworkDenied: 3},
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#sources-alert`)),
		chromedp.Click(chromedp.CSS("#sources-tab")), chromedp.WaitVisible(chromedp.CSS("#sources-table tbody tr"))); err != nil {
		t.Fatal(err)
	}
	alert, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#sources-alert")))
	if err != nil {
		t.Fatal(err)
	}
	first, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#sources-table tbody tr")))
	if err != nil {
		t.Fatal(err)
	}
	if alert != "2" || !strings.Contains(first, "big") || !strings.Contains(first, "500 (cap 1000)") || !strings.Contains(first, `raise it with "maxTools"`) {
		t.Errorf("alert %q, first row %q; want 2, and the cut source first with its count and reason", alert, first)
	}
	second, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#sources-table tbody tr:nth-child(2)")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"zfetch", "native (network allow: api.example.com, *.example.org:443; secrets: GITHUB_TOKEN, NPM_TOKEN)", "3 network denials, the latest:", "169.254.169.254 port 80: an IP literal not in the allow list"} {
		if !strings.Contains(second, want) {
			t.Errorf("second row %q lacks %q (a source refused the network comes before one that is not)", second, want)
		}
	}
}
