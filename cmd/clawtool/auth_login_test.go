package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
