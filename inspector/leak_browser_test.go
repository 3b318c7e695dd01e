package inspector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserTokenStaysOnItsPort is an attack: cookies are not kept apart
// by port, so a cookie the inspector set on 127.0.0.1 goes with every
// request the browser makes to any other server on 127.0.0.1, whoever
// runs it. When the inspector kept its token in a cookie, visiting
// another local server handed that server the token, and with it every
// tool (the page served to the token holds it for the API). The control
// is a cookie the test's own server sets beside the inspector: it does
// reach the other port, so the check could fail; the inspector's token
// must not.
func TestBrowserTokenStaysOnItsPort(t *testing.T) {
	exe := chromium(t)
	h := New(testRegistry(t))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("token") {
			http.SetCookie(w, &http.Cookie{Name: "control", Value: "crossed-ports", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var got []string // what the other server was sent
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.String())
		for k, v := range r.Header {
			got = append(got, k+": "+strings.Join(v, ", "))
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>another local server</p>"))
	}))
	defer other.Close()

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="order"]`)),
		chromedp.Navigate(other.URL+"/"), chromedp.WaitVisible(chromedp.CSS("p"))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sent := strings.Join(got, "\n")
	mu.Unlock()
	if !strings.Contains(sent, "control=crossed-ports") {
		t.Fatalf("control: the cookie set on the inspector's port did not reach the other port; the check below proves nothing. The other server got:\n%s", sent)
	}
	if strings.Contains(sent, h.Token()) {
		t.Errorf("another server on 127.0.0.1 was sent the inspector's token:\n%s", sent)
	}
	// The page still works from the URL with the token, reloaded too.
	if err := chromedp.Do(ctx, chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="order"]`))); err != nil {
		t.Fatalf("the page from its URL, reloaded: %v", err)
	}
}
