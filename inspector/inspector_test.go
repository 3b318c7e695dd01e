package inspector

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"go.uber.org/goleak"
)

const testToken = "0123456789abcdef0123"

func newTestHandler(t *testing.T) *Handler {
	return New(testRegistry(t), WithToken(testToken),
		WithSource(func(name string) string { return "built-in" }),
		WithDefinitions([]string{"upper", "broken"}, func(format string, tools []tool.Tool) ([]byte, error) {
			if format == "broken" {
				return nil, fmt.Errorf("cannot say %s", tools[0].Name())
			}
			return []byte(fmt.Sprintf(`[{"name":%q}]`, strings.ToUpper(tools[0].Name()))), nil
		}))
}

// do sends one request to h as a browser on the loopback interface would.
func do(h http.Handler, method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "127.0.0.1:7777"
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

var apiHeaders = map[string]string{TokenHeader: testToken, "Content-Type": "application/json", "Origin": "http://127.0.0.1:7777"}

func TestSafety(t *testing.T) {
	h := newTestHandler(t)
	cookie := "clawtool_inspector=" + testToken // what an earlier inspector set
	tok := map[string]string{TokenHeader: testToken}
	with := func(k, v string) map[string]string { return map[string]string{TokenHeader: testToken, k: v} }
	tests := []struct {
		name, method, target, body string
		hdr                        map[string]string
		want                       int
		wantIn                     string
	}{
		{"page with token", "GET", "/?token=" + testToken, "", nil, 200, "clawtool inspector"},
		{"page with wrong token", "GET", "/?token=nope", "", nil, 403, "wrong token"},
		{"page without token", "GET", "/", "", nil, 403, "missing or wrong token"},
		{"page with the cookie an earlier inspector set", "GET", "/", "", map[string]string{"Cookie": cookie}, 403, "missing or wrong token"},
		{"tools with that cookie", "GET", "/api/tools", "", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}, 403, "missing or wrong token"},
		{"rebinding Host", "GET", "/?token=" + testToken, "", map[string]string{"Host": "evil.example:7777"}, 403, "Host"},
		{"localhost Host", "GET", "/?token=" + testToken, "", map[string]string{"Host": "localhost:7777"}, 200, ""},
		{"IPv6 loopback Host", "GET", "/?token=" + testToken, "", map[string]string{"Host": "[::1]:7777"}, 200, ""},
		{"other Origin", "GET", "/api/tools", "", with("Origin", "http://evil.example"), 403, "origin"},
		{"Origin on another port", "GET", "/api/tools", "", with("Origin", "http://127.0.0.1:9999"), 403, "origin"},
		{"cross-site fetch", "GET", "/api/tools", "", with("Sec-Fetch-Site", "cross-site"), 403, "cross-site"},
		{"same-site fetch", "GET", "/api/tools", "", with("Sec-Fetch-Site", "same-site"), 403, "same-site"},
		{"same-origin fetch", "GET", "/api/tools", "", with("Sec-Fetch-Site", "same-origin"), 200, "order"},
		{"tools without token", "GET", "/api/tools", "", nil, 403, "token"},
		{"call with cookie only", "POST", "/api/call", `{"name":"slow"}`, map[string]string{"Cookie": cookie, "Content-Type": "application/json"}, 403, TokenHeader},
		{"call from other Origin", "POST", "/api/call", `{"name":"slow"}`, map[string]string{TokenHeader: testToken, "Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "origin"},
		{"call on GET", "GET", "/api/call?name=slow", "", tok, 405, ""},
		{"batch on GET", "GET", "/api/batch", "", tok, 405, ""},
		{"call as a form post", "POST", "/api/call", `name=slow`, map[string]string{TokenHeader: testToken, "Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"unknown path", "GET", "/api/nothing", "", tok, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, tt.method, tt.target, tt.body, tt.hdr)
			if w.Code != tt.want || !strings.Contains(w.Body.String(), tt.wantIn) {
				t.Errorf("%s %s: got %d %q, want %d containing %q", tt.method, tt.target, w.Code, shorten(w.Body.String()), tt.want, tt.wantIn)
			}
		})
	}
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestFirstVisitSetsNoCookie: the token stays out of cookies, which the
// browser would send to every port of the host (see
// TestBrowserTokenStaysOnItsPort).
func TestFirstVisitSetsNoCookie(t *testing.T) {
	h := newTestHandler(t)
	w := do(h, "GET", "/?token="+testToken, "", nil)
	for _, c := range w.Result().Cookies() {
		if c.Value != "" || c.MaxAge >= 0 {
			t.Fatalf("cookie %+v set, want none but the removal of the one earlier inspectors set", c)
		}
	}
	if c := w.Result().Cookies(); len(c) != 1 || c[0].Name != "clawtool_inspector" {
		t.Errorf("cookies %+v: want the earlier inspectors' cookie removed", c)
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if !strings.Contains(w.Body.String(), `content="`+testToken+`"`) {
		t.Error("the page does not carry the token for its API calls")
	}
}

func TestRandomToken(t *testing.T) {
	a, b := New(tool.NewRegistry()), New(tool.NewRegistry(), WithToken("short"))
	if len(a.Token()) != 32 || a.Token() == b.Token() {
		t.Fatalf("tokens %q and %q: want two different random 32-hex-digit tokens", a.Token(), b.Token())
	}
	if got := a.URL("http://127.0.0.1:1/ui/"); got != "http://127.0.0.1:1/ui/?token="+a.Token() {
		t.Errorf("URL = %q", got)
	}
	if New(tool.NewRegistry(), WithAllowedHosts("box.lan")).allowedHost("box.lan:80") != true {
		t.Error("WithAllowedHosts: box.lan refused")
	}
}

func TestTools(t *testing.T) {
	h := newTestHandler(t)
	w := do(h, "GET", "/api/tools", "", apiHeaders)
	var got []toolInfo
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	byName := map[string]toolInfo{}
	for _, ti := range got {
		byName[ti.Name] = ti
	}
	o := byName["order"]
	if o.Title != "Order pizza" || strings.Join(o.Badges, ",") != "destructive,open-world" || o.Source != "built-in" || !strings.Contains(string(o.InputSchema), `"enum"`) {
		t.Errorf("order = %+v", o)
	}
	if p := byName["picture"]; strings.Join(p.Badges, ",") != "read-only" {
		t.Errorf("picture badges = %v", p.Badges)
	}
}

func TestDefinitions(t *testing.T) {
	h := newTestHandler(t)
	w := do(h, "GET", "/api/definitions?name=order", "", apiHeaders)
	var got []definition
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err, w.Body)
	}
	if len(got) != 2 || string(got[0].Definition) != `{"name":"ORDER"}` || got[1].Error != "cannot say order" {
		t.Errorf("definitions = %s", w.Body)
	}
	if w := do(h, "GET", "/api/definitions?name=nope", "", apiHeaders); w.Code != 404 {
		t.Errorf("unknown tool: %d", w.Code)
	}
	plain := New(testRegistry(t), WithToken(testToken))
	w = do(plain, "GET", "/api/definitions?name=step", "", apiHeaders)
	if !strings.Contains(w.Body.String(), `"format":"openai"`) || !strings.Contains(w.Body.String(), `"function"`) {
		t.Errorf("default definitions = %s", w.Body)
	}
}

type event struct {
	name string
	data map[string]any
}

func readEvents(t *testing.T, body string) []event {
	var out []event
	sc := bufio.NewScanner(strings.NewReader(body))
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.data); err != nil {
				t.Fatalf("event %s: %v", ev.name, err)
			}
		case line == "":
			out = append(out, ev)
			ev = event{}
		}
	}
	return out
}

func TestCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newTestHandler(t)
	tests := []struct {
		name, body string
		wantCode   int
		check      func(t *testing.T, evs []event, body string)
	}{
		{"success with structured output", `{"name":"order","args":{"customer":"Ada","pizza":{"size":"large","toppings":["olives"]}}}`, 200, func(t *testing.T, evs []event, _ string) {
			r := evs[len(evs)-1]
			if r.name != "result" || r.data["output"] != "ordered a large pizza for Ada" || r.data["structured"] == nil {
				t.Errorf("result = %+v", r)
			}
		}},
		{"violations with pointers", `{"name":"order","args":{"customer":"","pizza":{"size":"huge","toppings":["x"]},"quantity":99}}`, 200, func(t *testing.T, evs []event, body string) {
			r := evs[len(evs)-1].data
			if r["kind"] != "invalid_arguments" {
				t.Fatalf("kind = %v", r["kind"])
			}
			var ptrs []string
			for _, v := range r["violations"].([]any) {
				ptrs = append(ptrs, v.(map[string]any)["pointer"].(string))
			}
			for _, want := range []string{"/customer", "/pizza/size", "/pizza/toppings/0", "/quantity"} {
				if !strings.Contains(strings.Join(ptrs, " ")+" ", want+" ") {
					t.Errorf("pointers %v lack %s", ptrs, want)
				}
			}
		}},
		{"progress and log stream before the result", `{"name":"slow"}`, 200, func(t *testing.T, evs []event, _ string) {
			var names []string
			for _, e := range evs {
				names = append(names, e.name)
			}
			if got := strings.Join(names, ","); got != "progress,log,progress,log,progress,log,result" {
				t.Errorf("events = %s", got)
			}
			if evs[1].data["message"] != "working" || evs[1].data["attrs"].(map[string]any)["step"] != "1" {
				t.Errorf("log event = %+v", evs[1].data)
			}
		}},
		{"parts", `{"name":"picture","args":{}}`, 200, func(t *testing.T, evs []event, _ string) {
			parts, _ := evs[len(evs)-1].data["parts"].([]any)
			if len(parts) != 3 || parts[0].(map[string]any)["type"] != "image" {
				t.Errorf("parts = %v", parts)
			}
		}},
		{"timeout kind", `{"name":"sleepy"}`, 200, func(t *testing.T, evs []event, _ string) {
			if k := evs[len(evs)-1].data["kind"]; k != "timeout" {
				t.Errorf("kind = %v", k)
			}
		}},
		{"arguments not an object", `{"name":"step","args":[1]}`, 200, func(t *testing.T, evs []event, _ string) {
			if k := evs[len(evs)-1].data["kind"]; k != "invalid_arguments" {
				t.Errorf("kind = %v", k)
			}
		}},
		{"unknown tool", `{"name":"nope"}`, 404, nil},
		{"no name", `{"args":{}}`, 400, nil},
		{"not JSON", `{"name":`, 400, nil},
		{"unknown field", `{"name":"slow","as":"root"}`, 400, nil},
		{"trailing data", `{"name":"slow"} {}`, 400, nil},
		{"too big", `{"name":"slow","args":{"x":"` + strings.Repeat("a", maxCallBytes) + `"}}`, 413, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, "POST", "/api/call", tt.body, apiHeaders)
			if w.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tt.wantCode, shorten(w.Body.String()))
			}
			if tt.check != nil {
				if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
					t.Fatalf("Content-Type %q", ct)
				}
				tt.check(t, readEvents(t, w.Body.String()), w.Body.String())
			}
		})
	}
}

func TestCallEventsBounded(t *testing.T) {
	h := newTestHandler(t)
	h.maxEvents = 2
	w := do(h, "POST", "/api/call", `{"name":"slow"}`, apiHeaders)
	evs := readEvents(t, w.Body.String())
	if len(evs) != 3 || evs[2].data["dropped_events"] != float64(4) {
		t.Errorf("events %d, last %+v: want 2 events, then a result saying 4 were dropped", len(evs), evs[len(evs)-1])
	}
}

func TestBatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newTestHandler(t)
	w := do(h, "POST", "/api/batch", sixCalls, apiHeaders)
	var tl timelineJSON
	if err := json.Unmarshal(w.Body.Bytes(), &tl); err != nil || w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	want := map[string]string{"a": "ok", "b": "ok", "c": "ok", "d": "error", "e": "skipped", "f": "ok"}
	rows := map[string]timelineRow{}
	for _, r := range tl.Rows {
		rows[r.ID] = r
		if r.Status != want[r.ID] {
			t.Errorf("%s: status %s, want %s", r.ID, r.Status, want[r.ID])
		}
	}
	if len(tl.Rows) != 6 || !rows["c"].Retried || rows["b"].Retried || rows["e"].Ran {
		t.Errorf("rows = %+v", tl.Rows)
	}
	// Order, not time: a dependent starts after what it waited for ends.
	for _, r := range tl.Rows {
		for _, d := range r.DependsOn {
			if r.Ran && rows[d].EndMS > r.StartMS {
				t.Errorf("%s starts at %vms, before %s ends at %vms", r.ID, r.StartMS, d, rows[d].EndMS)
			}
		}
	}

	bad := []struct{ name, body string }{
		{"not an array", `{"id":"a"}`},
		{"empty", `[]`},
		{"no name", `[{"id":"a"}]`},
		{"cycle", `[{"id":"a","name":"step","depends_on":["b"]},{"id":"b","name":"step","depends_on":["a"]}]`},
		{"unknown dependency", `[{"id":"a","name":"step","depends_on":["zz"]}]`},
		{"unknown field", `[{"id":"a","name":"step","after":["b"]}]`},
		{"too many calls", "[" + strings.Repeat(`{"name":"step"},`, maxBatchCalls) + `{"name":"step"}]`},
	}
	for _, b := range bad {
		if w := do(h, "POST", "/api/batch", b.body, apiHeaders); w.Code != 400 || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s: %d %s, want 400 with an error", b.name, w.Code, shorten(w.Body.String()))
		}
	}
}

// traceOutput is what "clawtool call --trace" prints for a small batch,
// laid out with the format strings of its timeline.
var traceOutput = `[
  {"id": "a", "output": "x", "error": "", "is_error": false},
  {"id": "second", "output": "", "error": "boom", "is_error": true, "kind": "tool_error"},
  {"id": "c", "output": "", "error": "skipped", "is_error": true, "kind": "skipped"},
  {"id": "d", "output": "y", "error": "", "is_error": false, "metadata": {"attempts": 2}}
]

trace: 4 calls in 12ms, at most 2 at once
` + fmt.Sprintf("%-6s  %-5s  %7s  %7s  %-42s  %s\n", "id", "tool", "start", "end", "", "waited for") +
	fmt.Sprintf("%-6s  %-5s  %7s  %7s  %s  %s\n", "a", "step", "0ms", "5ms", "|"+strings.Repeat("█", 16)+strings.Repeat(" ", 24)+"|", "-") +
	fmt.Sprintf("%-6s  %-5s  %7s  %7s  %s  %s\n", "second", "step", "450µs", "8ms", "| "+strings.Repeat("█", 23)+strings.Repeat(" ", 16)+"|", "-") +
	fmt.Sprintf("%-6s  %-5s  %7s  %7s  %-42s  not run: %s\n", "c", "step", "-", "-", "", "skipped") +
	fmt.Sprintf("%-6s  %-5s  %7s  %7s  %s  %s\n", "d", "flaky", "5ms", "12ms", "|"+strings.Repeat(" ", 16)+strings.Repeat("█", 24)+"|", "a, second")

func TestTrace(t *testing.T) {
	tl, err := parseTrace(traceOutput)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range tl.Rows {
		got += fmt.Sprintf("%s %s %v %v-%v %s %v %v;", r.ID, r.Name, r.Ran, r.StartMS, r.EndMS, r.Status, r.Retried, r.DependsOn)
	}
	want := "a step true 0-5 ok false [];second step true 0.45-8 error false [];c step false 0-0 skipped false [];d flaky true 5-12 ok true [a second];"
	if got != want || tl.TotalMS != 12 {
		t.Errorf("rows:\n%s\nwant\n%s (total %v)", got, want, tl.TotalMS)
	}
	for _, bad := range []string{"", "not json", "[]", "[]\ntrace: 1 calls\nid  tool  start  end  waited for\nx  step  soon  later  |  -\n", "[]\ntrace: 1\nnonsense header\nrow\n"} {
		if _, err := parseTrace(bad); err == nil {
			t.Errorf("parseTrace(%q) succeeded", bad)
		}
	}
	h := newTestHandler(t)
	body, _ := json.Marshal(traceRequest{Text: traceOutput})
	if w := do(h, "POST", "/api/trace", string(body), apiHeaders); w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"second"`) {
		t.Errorf("POST /api/trace: %d %s", w.Code, w.Body)
	}
	if w := do(h, "POST", "/api/trace", `{"text":"nope"}`, apiHeaders); w.Code != 400 {
		t.Errorf("POST /api/trace with junk: %d", w.Code)
	}
}

func FuzzTrace(f *testing.F) {
	f.Add(traceOutput)
	f.Add("[]\ntrace: x\nid  tool  start  end  waited for\n")
	f.Fuzz(func(t *testing.T, s string) {
		tl, err := parseTrace(s)
		if err == nil && len(tl.Rows) > maxBatchCalls {
			t.Fatalf("%d rows", len(tl.Rows))
		}
	})
}

// TestCallClientGone checks that a call whose browser went away ends with
// the request, as canceled, and leaves nothing running.
func TestCallClientGone(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := tool.NewRegistry()
	started := make(chan struct{})
	if err := r.Register(&rawTool{name: "wait", desc: "Waits for its caller to give up.", schema: `{"type":"object"}`,
		fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			close(started)
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}}); err != nil {
		t.Fatal(err)
	}
	h := New(r, WithToken(testToken))
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("POST", "/api/call", strings.NewReader(`{"name":"wait"}`)).WithContext(ctx)
	req.Host = "127.0.0.1:7777"
	for k, v := range apiHeaders {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	go func() { <-started; cancel() }()
	h.ServeHTTP(w, req)
	evs := readEvents(t, w.Body.String())
	if w.Code != 200 || len(evs) != 1 || evs[0].data["kind"] != "canceled" {
		t.Errorf("%d, events %+v: want one result of kind canceled", w.Code, evs)
	}
}

// TestCallStreams checks that progress reaches the client while the tool
// still runs: the tool does not finish until the client has read its
// first progress event.
func TestCallStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := tool.NewRegistry()
	release := make(chan struct{})
	if err := r.Register(&rawTool{name: "gate", desc: "Reports progress, then waits to be released.", schema: `{"type":"object"}`,
		fn: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			tool.ReportProgress(ctx, 1, 2, "half way")
			select {
			case <-release:
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
			return tool.Result{Output: "released"}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	h := New(r, WithToken(testToken))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/call", strings.NewReader(`{"name":"gate"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TokenHeader, testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var lines []string
	for len(lines) < 2 {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream before the tool ends: %v (got %q)", err, lines)
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	if lines[0] != "event: progress" || !strings.Contains(lines[1], `"message":"half way"`) {
		t.Fatalf("first event %q, want the progress report", lines)
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "event: result") || !strings.Contains(string(rest), `"output":"released"`) {
		t.Errorf("after the release: %q", rest)
	}
}
