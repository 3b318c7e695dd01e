package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium or Chrome binary. In CI (CI=true) a missing
// browser fails the test: .ci/run installs Debian's chromium.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium binary on PATH: CI must install it (apt-get install -y chromium)")
	}
	t.Skip("no chromium binary on PATH (apt-get install -y chromium)")
	return ""
}

// requestLog records what the inspector answered, for the browser tests to
// check requests the page itself cannot see the answer to.
type requestLog struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH ORIGIN-or-SEC-FETCH-SITE STATUS"
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: 200}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		from := r.Header.Get("Origin")
		if from == "" {
			from = r.Header.Get("Sec-Fetch-Site")
		}
		l.seen = append(l.seen, fmt.Sprintf("%s %s %s %d", r.Method, r.URL.Path, from, sw.code))
		l.mu.Unlock()
	})
}

func (l *requestLog) find(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.seen {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestBrowser drives the page in headless Chromium: the refusals, a form
// with a nested object, an enum and an array, violations beside their
// fields, an image result, streamed progress, a six-call batch on the
// timeline, and a trace file. Screenshots of each step go to the test's
// artifact directory (go test -artifacts keeps them).
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	h := New(testRegistry(t), WithSource(func(string) string { return "built-in" }))
	log := &requestLog{}
	srv := httptest.NewServer(log.wrap(h)) // 127.0.0.1, a free port
	defer srv.Close()
	// Another origin on the same machine, whose page tries to drive the
	// inspector with the browser's cookie.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body><p id="evil">evil</p><script>
fetch(%q, {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body: '{"name":"order"}'}).catch(() => {});
fetch(%q, {mode: "no-cors", credentials: "include"}).finally(() => { document.body.dataset.done = "1"; });
</script></body>`, srv.URL+"/api/call", srv.URL+"/api/tools")
	}))
	defer evil.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 820),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	// A bound on the whole session, so that a page that never shows what
	// a step waits for fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	shots := t.ArtifactDir()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg) // the whole page, as PNG
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644)
		})
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			_ = chromedp.Do(ctx, shot("failed-"+step))
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
	js := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](expr) }

	// Refused: no token, then a page of another origin.
	run("no token", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("body")), shot("01-no-token"))
	if got := text("body"); !strings.Contains(got, "missing or wrong token") {
		t.Errorf("page without the token shows %q", got)
	}
	run("open with token", chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="order"]`)))
	run("other origin", chromedp.Navigate(evil.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-done="1"]`)))
	refused := log.find("POST /api/call " + evil.URL + " 403")
	if len(refused) != 1 || len(log.find("POST /api/call "+evil.URL+" 200")) != 0 {
		t.Errorf("the other origin's POST: %v, want one 403", log.find("POST /api/call"))
	}
	// A GET in no-cors mode carries no Origin; Sec-Fetch-Site refuses it.
	if got := strings.Join(log.find("GET /api/tools"), ", "); got != "GET /api/tools same-origin 200, GET /api/tools same-site 403" {
		t.Errorf("GET /api/tools: %s; want the page's 200, then the other origin's 403", got)
	}

	// The page without the token in its URL is refused; with it, it
	// opens again.
	run("reopen without the token", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("body")))
	if got := text("body"); !strings.Contains(got, "missing or wrong token") {
		t.Errorf("page without the token, after a visit with it, shows %q", got)
	}
	run("reopen", chromedp.Navigate(h.URL(srv.URL+"/")), chromedp.WaitVisible(chromedp.CSS(`#tools li[data-name="order"]`)))
	var n int
	run("search", chromedp.SendKeys(chromedp.CSS("#search"), "pizza"))
	eval(`document.querySelectorAll("#tools li").length`, &n)
	if n != 1 || text("#tools li .name") != "order" {
		t.Errorf("searching pizza lists %d tools, want only order", n)
	}
	run("select order", chromedp.Click(chromedp.CSS(`#tools li[data-name="order"]`)), chromedp.WaitVisible(chromedp.CSS(`[id="f/customer"]`)), shot("02-form"))
	if got := text(`.field[data-pointer="/customer"] label`); got != "customer*" {
		t.Errorf("customer label %q: want the required mark", got)
	}
	var defaults string
	eval(`document.getElementById("f/quantity").value + "," + document.getElementById("f/pizza/extra_cheese").checked + "," + document.getElementById("f/pizza/size").tagName`, &defaults)
	if defaults != "1,false,SELECT" {
		t.Errorf("quantity, extra_cheese, size = %s; want the default 1, an unchecked box and a select", defaults)
	}
	selectOption := func(id, label string) chromedp.Action[chromedp.Void] {
		return js(fmt.Sprintf(`(() => { const s = document.getElementById(%q);
			s.value = [...s.options].find((o) => o.textContent === %q).value; s.dispatchEvent(new Event("change")); })()`, id, label))
	}
	run("fill the form",
		chromedp.SendKeys(chromedp.CSS(`[id="f/customer"]`), "Ada"),
		selectOption("f/pizza/size", "large"),
		chromedp.Click(chromedp.CSS(`[data-pointer="/pizza/toppings"] > button.add`)),
		chromedp.WaitVisible(chromedp.CSS(`[id="f/pizza/toppings/0"]`)),
		chromedp.SendKeys(chromedp.CSS(`[id="f/pizza/toppings/0"]`), "olives"),
		chromedp.Click(chromedp.CSS(`[data-pointer="/pizza/toppings"] > button.add`)),
		chromedp.WaitVisible(chromedp.CSS(`[id="f/pizza/toppings/1"]`)),
		chromedp.SendKeys(chromedp.CSS(`[id="f/pizza/toppings/1"]`), "basil"),
		chromedp.Click(chromedp.CSS(`#f\/pizza\/extra_cheese`)),
	)
	var raw string
	eval(`document.getElementById("raw-args").value`, &raw)
	if want := `{"customer":"Ada","pizza":{"extra_cheese":true,"size":"large","toppings":["olives","basil"]},"quantity":1}`; canonical(t, raw) != want {
		t.Errorf("raw JSON %s, want %s", raw, want)
	}
	run("remove a topping", chromedp.Click(chromedp.CSS(`[data-pointer="/pizza/toppings/1"] > button.remove`)))
	run("run", chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#result .okmark")), shot("03-result"))
	if got := text("#result pre.output"); got != "ordered a large pizza for Ada" {
		t.Errorf("result %q", got)
	}
	if got := text("#result .structured"); !strings.Contains(got, `customer: "Ada"`) || !strings.Contains(got, `eur: 9.5`) {
		t.Errorf("structured tree %q", got)
	}

	// The JSON editor drives the form; the server's violations land beside
	// the fields they name.
	const bad = `{"customer":"","pizza":{"size":"huge","toppings":["x"]},"quantity":99}`
	run("edit raw JSON", js(fmt.Sprintf(`(() => { const a = document.getElementById("raw-args"); a.value = %q; a.dispatchEvent(new Event("input")); })()`, bad)))
	var q string
	eval(`document.getElementById("f/quantity").value`, &q)
	if q != "99" {
		t.Errorf("the form's quantity is %q after editing the JSON, want 99", q)
	}
	var shown string
	eval(`document.getElementById("f/pizza/size").selectedOptions[0].textContent`, &shown)
	if got := shown; got != `"huge" (not allowed)` {
		t.Errorf("the size select shows %q, want the value the schema does not allow", got)
	}
	run("run invalid", chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS(`[data-pointer="/quantity"] .violation`)), shot("04-violations"))
	for _, p := range []string{"/customer", "/pizza/size", "/pizza/toppings/0", "/quantity"} {
		var msg string
		eval(fmt.Sprintf(`(() => { const f = [...document.querySelectorAll("#call-form [data-pointer]")].find((e) => e.getAttribute("data-pointer") === %q);
			const v = f && [...f.children].find((c) => c.classList.contains("violations")); return v ? v.textContent : ""; })()`, p), &msg)
		if !strings.HasPrefix(msg, p+": expected") {
			t.Errorf("beside %s: %q, want its violation", p, msg)
		}
	}
	if got := text("#result .kind"); got != "invalid_arguments" {
		t.Errorf("error kind %q", got)
	}

	// An image result, with audio and a link.
	run("picture", js(`(() => { const s = document.getElementById("search"); s.value = ""; s.dispatchEvent(new Event("input")); })()`),
		chromedp.Click(chromedp.CSS(`#tools li[data-name="picture"]`)), chromedp.Click(chromedp.CSS("#run")),
		chromedp.WaitVisible(chromedp.CSS("#result img.part-image")), shot("05-image"))
	var width int
	eval(`document.querySelector("#result img.part-image").naturalWidth`, &width)
	if width != 48 {
		t.Errorf("the image is %d pixels wide, want 48 (not decoded?)", width)
	}
	eval(`document.querySelectorAll("#result audio.part-audio[controls]").length + document.querySelectorAll('#result .part-link a').length * 10 + document.querySelectorAll('#result .part-link span.link-text[title="file:///tmp/square.png"]').length`, &n)
	if n != 2 {
		t.Errorf("audio player, and the file: resource link shown as text, not a link: got %d, want 2", n)
	}

	// Progress and log messages.
	run("slow", chromedp.Click(chromedp.CSS(`#tools li[data-name="slow"]`)), chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#result .okmark")))
	eval(`document.querySelectorAll("#events .ev-progress").length * 10 + document.querySelectorAll("#events .ev-log").length`, &n)
	if n != 33 {
		t.Errorf("progress*10+log events = %d, want 33", n)
	}

	// A recursive schema, through $ref: the form opens a level per item.
	run("tree", chromedp.Click(chromedp.CSS(`#tools li[data-name="tree"]`)), chromedp.WaitVisible(chromedp.CSS(`[id="f/root/label"]`)),
		chromedp.SendKeys(chromedp.CSS(`[id="f/root/label"]`), "top"),
		chromedp.Click(chromedp.CSS(`[data-pointer="/root/children"] > button.add`)),
		chromedp.WaitVisible(chromedp.CSS(`[id="f/root/children/0/label"]`)),
		chromedp.SendKeys(chromedp.CSS(`[id="f/root/children/0/label"]`), "leaf"))
	eval(`document.getElementById("raw-args").value`, &raw)
	if got := canonical(t, raw); got != `{"root":{"children":[{"label":"leaf"}],"label":"top"}}` {
		t.Errorf("tree arguments %s", got)
	}
	run("run tree", chromedp.Click(chromedp.CSS("#run")), chromedp.WaitVisible(chromedp.CSS("#result .okmark")))
	if got := text("#result pre.output"); got != "node node" {
		t.Errorf("tree result %q", got)
	}

	// Definitions in every format the handler knows.
	run("definitions", chromedp.Click(chromedp.CSS(`nav button[data-tab="definitions"]`)), chromedp.WaitVisible(chromedp.CSS(`pre.definition[data-format="openai"]`)))

	// A six-call batch on the timeline.
	run("batch", chromedp.Click(chromedp.CSS(`nav button[data-tab="batch"]`)),
		chromedp.SetValue(chromedp.CSS("#batch-input"), sixCalls),
		chromedp.Click(chromedp.CSS("#run-batch")),
		chromedp.WaitVisible(chromedp.CSS(`.tl-row[data-id="f"]`)), shot("06-timeline"))
	var rows, arrows []string
	eval(`[...document.querySelectorAll("#timeline .tl-row")].map((r) => r.dataset.id + ":" + r.dataset.status + (r.dataset.retried === "true" ? "+retried" : ""))`, &rows)
	if got := strings.Join(rows, " "); got != "a:ok b:ok c:ok+retried d:error e:skipped f:ok" {
		t.Errorf("timeline rows %s", got)
	}
	eval(`[...document.querySelectorAll("#timeline path.tl-arrow")].map((p) => p.getAttribute("data-from") + ">" + p.getAttribute("data-to"))`, &arrows)
	if got := strings.Join(arrows, " "); got != "a>b a>c d>e b>f c>f" {
		t.Errorf("timeline arrows %s", got)
	}
	var ordered bool
	eval(`(() => { const r = (id) => document.querySelector('.tl-bar[data-id="' + id + '"]').getBoundingClientRect();
		return r("b").left >= r("a").right - 1 && r("f").left >= r("b").right - 1 && r("f").left >= r("c").right - 1; })()`, &ordered)
	if !ordered {
		t.Error("a dependent's bar starts left of the end of what it waited for")
	}
	run("open a row", chromedp.Click(chromedp.CSS(`.tl-row[data-id="d"]`)), chromedp.WaitVisible(chromedp.CSS("#tl-detail .kind")))

	// A trace file from clawtool call --trace.
	trace := filepath.Join(t.TempDir(), "trace.txt")
	if err := os.WriteFile(trace, []byte(traceOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	run("trace file", chromedp.SetUploadFiles(chromedp.CSS("#trace-file"), []string{trace}),
		chromedp.WaitVisible(chromedp.CSS(`.tl-row[data-id="second"]`)), shot("07-trace"))
	eval(`[...document.querySelectorAll("#timeline .tl-row")].map((r) => r.dataset.id + ":" + r.dataset.status)`, &rows)
	if got := strings.Join(rows, " "); got != "a:ok second:error c:skipped d:ok" {
		t.Errorf("trace rows %s", got)
	}
	t.Logf("screenshots in %s", shots)
}

// canonical re-encodes a JSON value with sorted keys and no spaces.
func canonical(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
