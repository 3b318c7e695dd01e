package inspector

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miniopenclaw/tool"
)

// TestBrowserResultLinksCannotRunScript is an attack through a tool's
// result: the page made every resource and resource link a clickable
// link to the URI the tool (an imported server, say) gave, javascript:
// URIs included, and the page's policy lets inline script run, so a
// javascript: link followed in the page runs in the inspector's origin,
// where the token is. Chromium does not run one opened in a new tab (the
// links' target), which is all that held. The control follows such a
// link in the page's own frame and sees the script run there with the
// inspector's origin; the page must render no link a browser could run
// script from, while an https link stays a link.
func TestBrowserResultLinksCannotRunScript(t *testing.T) {
	exe := chromium(t)
	var mu sync.Mutex
	var ran []string
	var base string
	payload := func() string {
		return `javascript:location.href='` + base + `/ran?origin='+encodeURIComponent(self.origin)`
	}
	r := tool.NewRegistry()
	r.Register(&rawTool{name: "links", desc: "Returns links.", schema: `{"type":"object"}`,
		fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "links", Parts: []tool.Part{
				tool.ResourceLink(payload(), "click me"),
				tool.ResourceLink(" JavaScript:"+strings.TrimPrefix(payload(), "javascript:"), "or me"),
				tool.ResourceLink("https://example.test/doc", "a document"),
				tool.TextResource(payload(), "text/plain", "an embedded resource"),
			}}, nil
		}})
	h := New(r)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/ran" {
			mu.Lock()
			ran = append(ran, req.URL.Query().Get("origin"))
			mu.Unlock()
			return
		}
		h.ServeHTTP(w, req)
	}))
	defer srv.Close()
	base = srv.URL

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	eval := func(expr string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err == nil {
			err = json.Unmarshal(v, out)
		}
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="links"]`)),
		chromedp.Click(chromedp.CSS(`#tools li[data-name="links"]`)), chromedp.Click(chromedp.CSS("#run")),
		chromedp.WaitVisible(chromedp.CSS("#result .okmark"))); err != nil {
		t.Fatal(err)
	}
	var hrefs []string
	eval(`[...document.querySelectorAll("#result a")].map((a) => a.href)`, &hrefs)
	for _, href := range hrefs {
		if u := strings.ToLower(strings.TrimSpace(href)); !strings.HasPrefix(u, "https:") && !strings.HasPrefix(u, "http:") {
			t.Errorf("the result shows a link to %q", href)
		}
	}
	if len(hrefs) != 1 || hrefs[0] != "https://example.test/doc" {
		t.Errorf("links %q, want only the https one", hrefs)
	}
	var shown string
	eval(`document.querySelector("#result").textContent`, &shown)
	if !strings.Contains(shown, "click me") || !strings.Contains(shown, "an embedded resource") {
		t.Errorf("the refused links are not shown as text: %q", shown)
	}

	// Control: such a link followed in the page's frame runs its script
	// in the inspector's origin.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const a = document.createElement("a");
		a.href = `+jsString(payload())+`; document.body.append(a); a.click(); })()`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(ran, " ")
		mu.Unlock()
		if got != "" {
			if got != srv.URL {
				t.Errorf("control: the script ran in %q, want the inspector's origin %q", got, srv.URL)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("control: a javascript: link followed in the page did not run; the check above proves nothing")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
