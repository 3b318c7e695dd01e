package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/mcptool/oauth"
)

func TestAuthCommand(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	file := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(file, []byte(`{"mcpServers": {"remote": {"url": "https://mcp.example/mcp"}, "local": {"command": "x"}}}`), 0o600)
	cases := []struct {
		args        []string
		code        int
		out, errOut string
	}{
		{[]string{"auth", "status", "remote", "--config", file}, exitToolError, "remote: not logged in", ""},
		{[]string{"auth", "logout", "remote", "--config", file}, exitOK, "remote: not logged in", ""},
		{[]string{"auth", "status", "local", "--config", file}, exitToolError, "", "stdio server"},
		{[]string{"auth", "status", "nope", "--config", file}, exitToolError, "", `no server "nope"`},
		{[]string{"auth", "login", "remote"}, exitUsage, "", "--config FILE is required"},
		{[]string{"auth", "dance", "remote", "--config", file}, exitUsage, "", "unknown auth command"},
		{[]string{"auth", "login"}, exitUsage, "", "SERVER"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(t.Context(), c.args, nil, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.errOut) {
			t.Errorf("clawtool %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(c.args, " "), code, out.String(), errOut.String(), c.code, c.out, c.errOut)
		}
	}
}

// TestMCPURLBehindOAuth: a --mcp-url server behind MCP authorization is
// an entry of the plugins host like a configuration's url entry: without
// a stored login the command fails, saying how to log in from the flag;
// with the tokens of that login (kept under the URL, as clawtool auth
// login --mcp-url keeps them), its tools are listed and called, and auth
// status --mcp-url shows the login. Before, the flag sent no token and
// the server's 401 was the error.
func TestMCPURLBehindOAuth(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	const tok = "tok-0123456789"
	reg := tool.NewRegistry()
	reg.Register(tool.Must(tool.New("hello", "Says hello.", func(context.Context, struct{}) (string, error) { return "hello", nil })))
	srv := mcptool.NewServer(reg)
	t.Cleanup(func() { srv.Close() })
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"call", "--no-builtins", "--mcp-url", url, "hello"}, nil, &out, &errOut)
	if code != exitToolError || !strings.Contains(errOut.String(), "clawtool auth login --mcp-url "+url) {
		t.Fatalf("without a login: exit %d, stderr %q; want %d and how to log in", code, errOut.String(), exitToolError)
	}

	dir, err := oauth.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	store := &oauth.FileStore{Dir: dir}
	if err := store.Save(t.Context(), oauth.Key{Server: url}, &oauth.Record{Resource: url, AccessToken: tok}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"call", "--no-builtins", "--mcp-url", url, "hello"}, nil, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), `"output": "hello"`) {
		t.Errorf("with the stored login: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	out.Reset()
	code = run(t.Context(), []string{"auth", "status", "--mcp-url", url}, nil, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), url+": logged in") {
		t.Errorf("auth status --mcp-url: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	code = run(t.Context(), []string{"auth", "status", "remote", "--mcp-url", url}, nil, &out, &errOut)
	if code != exitUsage || !strings.Contains(errOut.String(), "without SERVER or --config") {
		t.Errorf("auth status SERVER --mcp-url: exit %d, stderr %q; want a usage error", code, errOut.String())
	}
}

// TestAuthStatusEscapesServerText: `clawtool auth status` shows what an
// authorization server wrote (its client ID, the scopes it granted, the
// issuer and resource) escaped, one line each: a record kept before the
// oauth package refused control characters there (or written by another
// program) holds them, and printed raw an escape sequence would clear
// or retitle the user's terminal and print a line of the server's
// choosing. The control is that the record, read back, still holds them.
func TestAuthStatusEscapesServerText(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	file := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(file, []byte(`{"mcpServers": {"remote": {"url": "https://mcp.example/mcp"}}}`), 0o600)
	dir, err := oauth.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	store := &oauth.FileStore{Dir: dir}
	const esc = "\x1b]0;pwned\x07\x1b[2J"
	key := oauth.Key{Server: "https://mcp.example/mcp"}
	rec := &oauth.Record{Resource: "https://mcp.example/mcp", Issuer: "https://as.example", Registration: "dynamic",
		ClientID: "client" + esc + "\nlogged in at https://trusted.example", Scopes: []string{"read" + esc},
		AccessToken: "at-kept", TokenEndpoint: "https://as.example/token", AuthMethod: "none"}
	if err := store.Save(t.Context(), key, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Load(t.Context(), key); err != nil || !strings.Contains(got.ClientID, "\x1b") {
		t.Fatalf("control: the record read back: %+v, %v", got, err)
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"auth", "status", "remote", "--config", file}, nil, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out.String(), errOut.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") || strings.Contains(out.String(), "\nlogged in at https://trusted") {
		t.Errorf("the server's text reached the terminal raw: %q", out.String())
	}
	if !strings.Contains(out.String(), `\x1b`) {
		t.Errorf("the escaped client ID is not shown: %q", out.String())
	}
}
