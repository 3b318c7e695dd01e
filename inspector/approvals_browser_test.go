package inspector

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/miniopenclaw/tool/policy"
)

// TestBrowserApprovals drives the Approvals tab in Chromium: bob's call
// asks; it appears in the tab of an inspector answering as cid, who is
// no lead, and cid's click on Approve shows the policies' refusal; in the
// tab of an inspector answering as ann, a lead, it is approved by a
// click, and the call made again runs, once. A second call, made while
// the page is open, appears by itself (the tab reloads its list).
func TestBrowserApprovals(t *testing.T) {
	exe := chromium(t)
	w := newApprovalWorld(t)
	id, _ := w.ask(t, "1.2.0")
	if id == "" {
		t.Fatal("the call did not ask")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
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
	row := `#approvals-table tr[data-id="` + id + `"]`

	// cid may not approve deploys: the page says why, and nothing runs.
	cid := httptest.NewServer(w.handler(policy.Principal{ID: "cid"}))
	defer cid.Close()
	run("open as cid", chromedp.Navigate(w.handler(policy.Principal{}).URL(cid.URL+"/")),
		chromedp.WaitVisible(chromedp.CSS(`#approvals-tab`)), chromedp.Click(chromedp.CSS(`#approvals-tab`)),
		chromedp.WaitVisible(chromedp.CSS(row)))
	if got := text(row); !strings.Contains(got, "bob") || !strings.Contains(got, "deploy") || !strings.Contains(got, `{"version":"1.2.0"}`) || !strings.Contains(got, "deploys need a lead") {
		t.Errorf("the pending row shows %q", got)
	}
	run("cid approves", chromedp.Click(chromedp.CSS(row+" button.approve")), chromedp.WaitVisible(chromedp.CSS(row+" .approval-status.error-box")))
	if got := text(row + " .approval-status"); !strings.Contains(got, "refused") || !strings.Contains(got, "not permitted") {
		t.Errorf("cid's refusal shows %q", got)
	}
	if r, err := w.store.Get(context.Background(), id, time.Now()); err != nil || r.State != policy.ApprovalPending {
		t.Fatalf("after cid's click: %+v, %v; want still pending", r, err)
	}

	// ann, a lead, approves with a note.
	ann := httptest.NewServer(w.handler(policy.Principal{ID: "ann", Roles: []string{"lead"}}))
	defer ann.Close()
	run("open as ann", chromedp.Navigate(w.handler(policy.Principal{}).URL(ann.URL+"/")),
		chromedp.WaitVisible(chromedp.CSS(`#approvals-tab`)), chromedp.Click(chromedp.CSS(`#approvals-tab`)),
		chromedp.WaitVisible(chromedp.CSS(row)))
	if got := text("#approvals-as"); !strings.Contains(got, "ann") {
		t.Errorf("the tab says it answers as %q", got)
	}
	run("ann approves", chromedp.SendKeys(chromedp.CSS(row+" input.approval-note"), "ship it"),
		chromedp.Click(chromedp.CSS(row+" button.approve")), chromedp.WaitVisible(chromedp.CSS(row+" .approval-status.okmark")))
	if got := text(row + " .approval-status"); got != "approved by ann" {
		t.Errorf("ann's answer shows %q", got)
	}
	if w.runs.Load() != 0 {
		t.Fatal("the tool ran before the call was made again")
	}
	if _, res := w.ask(t, "1.2.0"); res.IsError || res.Output != "deployed 1.2.0" {
		t.Errorf("the approved call made again: %+v", res)
	}
	if _, res := w.ask(t, "1.2.0"); w.runs.Load() != 1 || !res.IsError {
		t.Errorf("the tool ran %d times, want once (%+v)", w.runs.Load(), res)
	}

	// A request made while the page is open appears by itself.
	id2, _ := w.ask(t, "2.0.0")
	run("live update", chromedp.WaitVisible(chromedp.CSS(`#approvals-table tr[data-id="`+id2+`"]`)))
}
