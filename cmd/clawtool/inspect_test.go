package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/inspector"
)

// startInspector runs a command that prints the inspector's URL and
// returns that URL.
func startInspector(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lineWriter{lines: make(chan string, 64)}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, nil, io.Discard, stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("%v ended with %d", args, code)
		}
	})
	at := regexp.MustCompile(`inspector at (http://\S+)`)
	for {
		select {
		case line := <-stderr.lines:
			if m := at.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-time.After(wait):
			t.Fatalf("%v did not print the inspector's URL", args)
		}
	}
}

// get fetches u with the token header and returns the status and body.
func inspectorGet(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set(inspector.TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestInspect(t *testing.T) {
	page := startInspector(t, "inspect", "--addr", "127.0.0.1:0")
	u, err := url.Parse(page)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Path != "/" {
		t.Fatalf("URL %q: want http://127.0.0.1:PORT/?token=…", page)
	}
	token := u.Query().Get("token")
	base := "http://" + u.Host + "/"
	if code, body := inspectorGet(t, page, ""); code != 200 || !strings.Contains(body, "clawtool inspector") {
		t.Errorf("the printed URL: %d", code)
	}
	if code, _ := inspectorGet(t, base, ""); code != 403 {
		t.Errorf("the page without the token: %d, want 403", code)
	}
	code, body := inspectorGet(t, base+"api/tools", token)
	var tools []struct{ Name, Source string }
	if err := json.Unmarshal([]byte(body), &tools); err != nil || code != 200 || len(tools) == 0 {
		t.Fatalf("api/tools: %d %s", code, body)
	}
	for _, tl := range tools {
		if tl.Source != "built-in" {
			t.Errorf("%s: source %q, want built-in", tl.Name, tl.Source)
		}
	}
	_, body = inspectorGet(t, base+"api/definitions?name="+tools[0].Name, token)
	for _, f := range providerFormats() {
		if !strings.Contains(body, `"format":"`+f+`"`) {
			t.Errorf("definitions lack %s: %s", f, body)
		}
	}
}

func TestServeUI(t *testing.T) {
	page := startInspector(t, "serve", "--http", "127.0.0.1:0", "--ui")
	u, _ := url.Parse(page)
	if u.Path != "/ui/" {
		t.Fatalf("URL %q: want the page under /ui/", page)
	}
	if code, _ := inspectorGet(t, page, ""); code != 200 {
		t.Errorf("GET %s: %d", page, code)
	}
	req, _ := http.NewRequest("POST", "http://"+u.Host+"/ui/api/call", strings.NewReader(`{"name":"nope"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(inspector.TokenHeader, u.Query().Get("token"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("calling an unknown tool under /ui/: %d, want 404 from the inspector", resp.StatusCode)
	}
}

func TestInspectUsage(t *testing.T) {
	if code := run(context.Background(), []string{"inspect", "extra"}, nil, io.Discard, io.Discard); code != exitUsage {
		t.Errorf("inspect extra: %d, want %d", code, exitUsage)
	}
	if got := toolSource(tool.Must(tool.New("x", "x", func(context.Context, struct{}) (string, error) { return "", nil })), false); got != "" {
		t.Errorf("source of a tool from package tool: %q, want unknown", got)
	}
}

// TestInspectorReadsTrace checks that the inspector reads what clawtool
// call --trace prints.
func TestInspectorReadsTrace(t *testing.T) {
	r := tool.NewRegistry()
	if err := registerBuiltins(r); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	batch := `[{"id":"first","name":"calc","args":{"expression":"1+2"}},{"id":"b","name":"calc","args":{"expression":"2*3"},"depends_on":["first"]},{"id":"c","name":"calc","args":{"bad":1}},{"id":"d","name":"calc","args":{},"depends_on":["c"]}]`
	if _, err := runBatch(context.Background(), r, []byte(batch), true, &out); err != nil {
		t.Fatal(err)
	}
	h := newInspector(r)
	body, _ := json.Marshal(map[string]string{"text": out.String()})
	req := httptest.NewRequest("POST", "/api/trace", strings.NewReader(string(body)))
	req.Host = "127.0.0.1:1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(inspector.TokenHeader, h.Token())
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var tl struct {
		Rows []struct {
			ID        string   `json:"id"`
			Name      string   `json:"name"`
			Ran       bool     `json:"ran"`
			Status    string   `json:"status"`
			DependsOn []string `json:"depends_on"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &tl); err != nil || w.Code != 200 {
		t.Fatalf("%d %s\nfrom\n%s", w.Code, w.Body, out.String())
	}
	var got []string
	for _, row := range tl.Rows {
		got = append(got, fmt.Sprintf("%s/%s/%v/%s/%v", row.ID, row.Name, row.Ran, row.Status, row.DependsOn))
	}
	want := "first/calc/true/ok/[] b/calc/true/ok/[first] c/calc/true/error/[] d/calc/false/skipped/[]"
	if strings.Join(got, " ") != want {
		t.Errorf("rows\n%s\nwant\n%s\nfrom\n%s", strings.Join(got, " "), want, out.String())
	}
}

// TestInspectorShowsCut opens the inspector on a configuration whose
// server is cut at its cap: its Sources view (GET /api/sources) says how
// many tools were left out and what raises the cap.
func TestInspectorShowsCut(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	exe, env := manyServer(t, 1500)
	file := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"cut": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": env, "maxTools": 1000},
	}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	page := startInspector(t, "inspect", "--addr", "127.0.0.1:0", "--no-builtins", "--config", file)
	u, _ := url.Parse(page)
	code, body := inspectorGet(t, "http://"+u.Host+"/api/sources", u.Query().Get("token"))
	var got []inspector.Source
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
		t.Fatalf("api/sources: %d %s", code, body)
	}
	want := []inspector.Source{{Name: "cut", Kind: "mcp", State: "ready", Tools: 1000, MaxTools: 1000, LeftOut: 500, Confinement: "unconfined",
		Error: `500 tools left out: the server lists more than its cap of 1000 tools (raise it with "maxTools" in its entry, up to 100000)`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
}
