package inspector

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCallAs drives the page's "call as" and audit table.
func TestBrowserCallAs(t *testing.T) {
	exe := chromium(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(audit, []byte(`{"seq":1,"event":"decision","principal":"bob","tool":"echo","effect":"deny","reason":"only alice"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newAccessHandler(t, audit)
	srv := httptest.NewServer(h)
	defer srv.Close()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	run("open", chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="echo"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#call-as`)), chromedp.Click(chromedp.CSS(`#tools li[data-name="echo"]`)))
	run("call as bob", chromedp.SendKeys(chromedp.CSS("#as-id"), "bob"), chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#result .decision")))
	if got := text("#result"); !strings.Contains(got, "decision: deny") || !strings.Contains(got, "only alice may call echo") {
		t.Errorf("as bob the result shows %q", got)
	}
	run("call as alice", chromedp.Evaluate[chromedp.Void](`document.getElementById("as-id").value = "alice"`),
		chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#result .okmark")))
	if got := text("#result"); !strings.Contains(got, "echoed") {
		t.Errorf("as alice the result shows %q", got)
	}
	run("audit", chromedp.Click(chromedp.CSS("#audit-tab")), chromedp.WaitVisible(chromedp.CSS("#audit-table tbody tr")))
	if got := text("#audit-table tbody"); !strings.Contains(got, "bob") || !strings.Contains(got, "only alice") {
		t.Errorf("audit table shows %q", got)
	}
}
