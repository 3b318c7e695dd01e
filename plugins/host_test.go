package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// names returns the names of the tools in reg.
func names(reg *tool.Registry) []string {
	var out []string
	for _, t := range reg.List() {
		out = append(out, t.Name())
	}
	return out
}

// eventually polls cond until it holds, failing the test after a bound
// on the number of polls (generous: a busy machine starts processes
// slowly).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 3000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never happened: %s", what)
}

func TestApplyLoadsEachEntryOnItsOwn(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	dir := t.TempDir()
	log := filepath.Join(dir, "starts")
	junk := filepath.Join(dir, "junk.wasm")
	if err := os.WriteFile(junk, []byte("\x00asm not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	exits := fixture(t, "", "x")
	exits.Env["PLUGINS_FIXTURE_EXIT"] = "1"
	exits.Args = append(exits.Args, "--token", "s3cr3t-value")
	exits.Env["TOKEN"] = "s3cr3t-value" // (set by hand here; Parse collects secrets from ${...})
	c := &Config{
		Servers: map[string]Server{
			"good":    withPrefix(fixture(t, log, "echo"), "g_"),
			"missing": {Command: filepath.Join(dir, "no-such-server")},
			"exits":   exits,
		},
		Modules: map[string]Module{
			"broken": {Path: junk, Tools: []ToolSpec{{Name: "t"}}},
			"absent": {Path: filepath.Join(dir, "absent.wasm"), Tools: []ToolSpec{{Name: "t"}}},
		},
		secrets: []string{"s3cr3t-value"},
	}
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	h.Apply(t.Context(), c)

	got := map[string]Status{}
	for _, s := range h.Status() {
		got[s.Name] = s
	}
	if s := got["good"]; s.State != Ready || s.Tools != 2 || s.Kind != KindServer {
		t.Errorf("good: %+v, want ready with 2 tools", s)
	}
	for name, reason := range map[string]string{
		"missing": "no-such-server",
		"exits":   "exited",
		"broken":  "module refused",
		"absent":  "no such file",
	} {
		s := got[name]
		if s.State != Failed || !strings.Contains(s.Err, reason) {
			t.Errorf("%s: %+v, want failed with %q in the reason", name, s, reason)
		}
		if strings.Contains(s.Err, "s3cr3t") {
			t.Errorf("%s: the reason shows a secret: %s", name, s.Err)
		}
	}
	if !strings.Contains(got["exits"].Err, "[redacted]") {
		t.Errorf("exits: the reason %q does not quote the redacted arguments", got["exits"].Err)
	}
	if want := []string{"g_echo", "g_wait"}; !slices.Equal(names(reg), want) {
		t.Errorf("registry holds %v, want %v", names(reg), want)
	}
	res := reg.Execute(t.Context(), "g_echo", json.RawMessage(`{"text":"hi"}`))
	if res.IsError || res.Output != "echo:hi" {
		t.Errorf("g_echo: %+v", res)
	}

	// Applied again, the failed entries are tried again and the good one
	// is left alone; once its module is there, "absent" loads.
	if err := os.Rename(junk, filepath.Join(dir, "absent.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "absent.wasm"), helloModule(), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Apply(t.Context(), c)
	for _, s := range h.Status() {
		if want := map[string]State{"good": Ready, "absent": Ready}[s.Name]; want != "" && s.State != want {
			t.Errorf("after the second Apply, %s: %+v", s.Name, s)
		}
	}
	if n := len(starts(t, log)); n != 1 {
		t.Errorf("the good server started %d times, want once", n)
	}
	if want := []string{"g_echo", "g_wait", "t"}; !slices.Equal(names(reg), want) {
		t.Errorf("registry holds %v, want %v", names(reg), want)
	}
	h.Close()
	if n := reg.Len(); n != 0 {
		t.Errorf("after Close the registry holds %v", names(reg))
	}
}

func withPrefix(s Server, p string) Server { s.Prefix = p; return s }

// writeConfig writes c to file as a whole (a new file renamed over the
// old, as editors do).
func writeConfig(t *testing.T, file string, c any) {
	t.Helper()
	b, ok := c.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(c); err != nil {
			t.Fatal(err)
		}
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// TestWatchReloads changes the file while an MCP client is connected to a
// server over the registry: a server is added, one changed and one
// removed (with a call in flight on it), then a malformed edit is made.
func TestWatchReloads(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	log := filepath.Join(dir, "starts")
	servers := map[string]Server{
		"a": withPrefix(fixture(t, log, "one"), "a_"),
		"b": withPrefix(fixture(t, log, "one"), "b_"),
		"c": withPrefix(fixture(t, log, "one"), "c_"),
	}
	writeConfig(t, file, map[string]any{"mcpServers": servers})

	reg := tool.NewRegistry()
	var mu sync.Mutex
	var reloadErrs []error
	h := NewHost(reg, WithDebounce(50*time.Millisecond), WithReloadFunc(func(err error) {
		mu.Lock()
		reloadErrs = append(reloadErrs, err)
		mu.Unlock()
	}))
	lastReload := func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(reloadErrs) == 0 {
			return 0, nil
		}
		return len(reloadErrs), reloadErrs[len(reloadErrs)-1]
	}

	// An MCP client of a server in front of the registry.
	srv := mcptool.NewServer(reg)
	defer srv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx, st) }()
	changed := make(chan struct{}, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, t := range res.Tools {
			out = append(out, t.Name)
		}
		slices.Sort(out)
		return out
	}

	watched := make(chan error, 1)
	go func() { watched <- h.Watch(ctx, file) }()
	eventually(t, "the first load", func() bool { n, _ := lastReload(); return n >= 1 && len(names(reg)) == 6 })
	if want := []string{"a_one", "a_wait", "b_one", "b_wait", "c_one", "c_wait"}; !slices.Equal(listed(), want) {
		t.Fatalf("client lists %v, want %v", listed(), want)
	}
	first := starts(t, log)
	if len(first) != 3 {
		t.Fatalf("%d starts, want 3", len(first))
	}

	// A call in flight on c, which is about to be removed.
	inflight := make(chan tool.Result, 1)
	go func() {
		res := reg.Execute(ctx, "c_wait", json.RawMessage(`{}`))
		inflight <- res
	}()
	eventually(t, "the call on c in flight", func() bool {
		h.mu.Lock()
		e := h.entries["c"]
		h.mu.Unlock()
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.calls) == 1
	})
	drain(changed)

	// b changes (another tool), c goes, d comes; a stays as it is.
	servers["b"] = withPrefix(fixture(t, log, "two"), "b_")
	delete(servers, "c")
	servers["d"] = withPrefix(fixture(t, log, "one"), "d_")
	writeConfig(t, file, map[string]any{"mcpServers": servers})
	want := []string{"a_one", "a_wait", "b_two", "b_wait", "d_one", "d_wait"}
	eventually(t, "the reload", func() bool { return slices.Equal(names(reg), want) })
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("no notifications/tools/list_changed after the reload")
	}
	eventually(t, "the client to see the new tools", func() bool { return slices.Equal(listed(), want) })
	res := <-inflight
	if !res.IsError || res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "removed from the configuration") {
		t.Errorf("the call in flight on the removed server ended with %+v", res)
	}
	all := starts(t, log)
	if len(all) != 5 {
		t.Errorf("%d starts after the reload, want 5 (b again, and d)", len(all))
	}
	// a's process is the one first started; b's and c's first ones are gone.
	if running := slices.DeleteFunc(slices.Clone(first), func(pid int) bool { return !alive(pid) }); len(running) != 1 {
		t.Errorf("%d of the first three servers still run, want 1 (a, unchanged)", len(running))
	}

	// A malformed edit keeps the last good configuration.
	n, _ := lastReload()
	writeConfig(t, file, []byte(`{"mcpServers": {"a": `))
	eventually(t, "the malformed edit to be read", func() bool { m, err := lastReload(); return m > n && err != nil })
	if _, err := lastReload(); !strings.Contains(err.Error(), "not a valid configuration") {
		t.Errorf("reload error %q does not say why", err)
	}
	if h.ConfigError() == nil {
		t.Error("ConfigError is nil after a malformed edit")
	}
	if !slices.Equal(names(reg), want) || len(starts(t, log)) != 5 {
		t.Errorf("a malformed edit changed the tools (%v) or started servers", names(reg))
	}
	if st := h.Status(); len(st) != 3 || st[0].State != Ready {
		t.Errorf("status after a malformed edit: %+v", st)
	}

	cancel()
	if err := <-watched; err != nil {
		t.Error(err)
	}
	h.Close()
	cs.Close()
	<-served
	for _, pid := range starts(t, log) {
		if alive(pid) {
			t.Errorf("server process %d is still running after Close", pid)
		}
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// manyFixture is a fixture server entry serving n tools, 100 a page.
func manyFixture(t *testing.T, n int) Server {
	s := fixture(t, "")
	s.Env[manyEnv] = fmt.Sprint(n)
	return s
}

// TestToolCap loads a server that lists 1,500 tools over 15 pages: all
// are imported by default, and a cap of 1,000 ("maxTools") imports
// exactly 1,000 and reports the 500 left out in the status and in one
// line of the log that names the field raising it.
func TestToolCap(t *testing.T) {
	for _, tt := range []struct {
		name      string
		maxTools  int
		wantTools int
		wantCut   *Cut
	}{
		{"default", 0, 1500, nil},
		{"cap of 1000", 1000, 1000, &Cut{MaxTools: 1000, LeftOut: 500}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logger, logged := capturedLog()
			s := manyFixture(t, 1500)
			s.MaxTools = tt.maxTools
			reg := tool.NewRegistry()
			h := NewHost(reg, WithLogger(logger))
			defer h.Close()
			h.Apply(t.Context(), &Config{Servers: map[string]Server{"many": s}})
			st := h.Status()
			if len(st) != 1 || st[0].State != Ready || st[0].Tools != tt.wantTools || reg.Len() != tt.wantTools {
				t.Fatalf("status %+v, registry %d tools; want ready with %d", st, reg.Len(), tt.wantTools)
			}
			if diff := cmp.Diff(tt.wantCut, st[0].Cut); diff != "" {
				t.Errorf("Status.Cut (-want +got):\n%s", diff)
			}
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			if tt.wantCut == nil {
				if st[0].Err != "" || logged.Len() != 0 {
					t.Errorf("uncut: Err %q, log %q; want neither", st[0].Err, logged.String())
				}
				return
			}
			want := `500 tools left out: the server lists more than its cap of 1000 tools (raise it with "maxTools" in its entry, up to 100000)`
			if st[0].Err != want {
				t.Errorf("Status.Err = %q, want %q", st[0].Err, want)
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], `MCP server \"many\": `+strings.ReplaceAll(want, `"`, `\"`)) {
				t.Errorf("log:\n%s\nwant one WARN line saying %s", logged.String(), want)
			}
		})
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestToolCapFollowsReimport serves 1,500 tools over Streamable HTTP on
// loopback with a cap of 1,000, then adds one that lists first: after the
// re-import the status counts 501 left out, and the log says so in one
// more WARN line.
func TestToolCapFollowsReimport(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // a URL entry's token store: not the user's
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "0"}, &mcp.ServerOptions{PageSize: 100})
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	for i := range 1500 {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: map[string]any{"type": "object"}}, handler)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer hs.Close()
	logger, logged := capturedLog()
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
			if strings.Contains(l, "tools left out") {
				out = append(out, l)
			}
		}
		return out
	}
	reg := tool.NewRegistry()
	h := NewHost(reg, WithLogger(logger))
	defer h.Close()
	h.Apply(t.Context(), &Config{Servers: map[string]Server{"many": {URL: hs.URL, MaxTools: 1000}}})
	if st := h.Status(); len(st) != 1 || st[0].State != Ready || st[0].Tools != 1000 || st[0].Cut == nil || st[0].Cut.LeftOut != 500 {
		t.Fatalf("status %+v, want ready with 1000 tools and 500 left out", st)
	}
	s.AddTool(&mcp.Tool{Name: "new", InputSchema: map[string]any{"type": "object"}}, handler)
	eventually(t, "the re-import's cut", func() bool {
		st := h.Status()
		return st[0].Cut != nil && st[0].Cut.LeftOut == 501
	})
	if _, ok := reg.Get("new"); !ok || reg.Len() != 1000 {
		t.Errorf("after the re-import: new there %v, %d tools; want it, and 1000", ok, reg.Len())
	}
	eventually(t, "the re-import's log line", func() bool { return len(lines()) == 2 })
	if got := lines(); !strings.Contains(got[1], "501 tools left out") || !strings.Contains(got[1], `\"maxTools\"`) || strings.Contains(got[1], "WithImportLimits") {
		t.Errorf("log lines about the cut:\n%s", strings.Join(got, "\n"))
	}
}

// TestServerTasks: a URL server's tool whose calls run only as MCP tasks
// is called through the host as an ordinary call (the client awaits the
// task); "noTasks" on the entry turns tasks off, and the same call fails.
func TestServerTasks(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // a URL entry's token store: not the user's
	up := tool.NewRegistry()
	up.Register(tool.Must(tool.New("build", "Builds, as a task.", func(context.Context, struct{}) (string, error) {
		return "built", nil
	}, tool.WithTask(tool.TaskRequired))))
	srv := mcptool.NewServer(up, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond}))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, tc := range []struct {
		noTasks bool
		want    string
		isError bool
	}{{false, "built", false}, {true, "task", true}} {
		reg := tool.NewRegistry()
		h := NewHost(reg)
		h.Apply(t.Context(), &Config{Servers: map[string]Server{"up": {URL: hs.URL + "/mcp", NoTasks: tc.noTasks}}})
		res := reg.Execute(t.Context(), "build", json.RawMessage(`{}`))
		h.Close()
		got := res.Output
		if res.IsError {
			got = res.Error
		}
		if res.IsError != tc.isError || !strings.Contains(got, tc.want) {
			t.Errorf("noTasks %v: %+v, want isError %v and %q", tc.noTasks, res, tc.isError, tc.want)
		}
	}
}

// capturedLog returns a logger and what it has written so far, safe for
// the host's goroutines.
func capturedLog() (*slog.Logger, *lockedBuilder) {
	b := &lockedBuilder{}
	return slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.b.Write(p)
	}), nil)), b
}

// A lockedBuilder is a strings.Builder behind a mutex.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuilder) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

// ignoreSpawnThread leaves out of the leak checks the sandbox's spawning
// thread, which lives as long as the forker it started: the default
// backend keeps its forker for the program's life.
var ignoreSpawnThread = goleak.IgnoreTopFunction("github.com/miniopenclaw/tool/sandbox.spawnLoop")
