package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"go.uber.org/goleak"
)

// moduleHost loads the example module with its three tools and a
// workspace holding hello.txt. (One module entry: compiling a module
// built by Go takes seconds under the race detector.)
func moduleHost(t *testing.T) *tool.Registry {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	writeConfig(t, file, []byte(`{
	  "wasmModules": {
	    "text": {"path": "`+toolModule(t)+`", "prefix": "t_", "timeout": "300ms", "workspace": "`+ws+`",
	      "tools": [
	        {"name": "upper", "description": "Upper-cases text.",
	         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}},
	        {"name": "spin", "description": "Never returns."},
	        {"name": "read", "description": "Reads a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
	      ]}
	  }
	}`))
	reg := tool.NewRegistry()
	h := NewHost(reg)
	t.Cleanup(func() { h.Close() })
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Status() {
		if s.State != Ready {
			t.Fatalf("module %s: %+v", s.Name, s)
		}
	}
	return reg
}

func TestModuleTools(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg := moduleHost(t)
	host, err := os.ReadFile("/etc/hostname")
	if err != nil || len(strings.TrimSpace(string(host))) == 0 {
		host = []byte("root:x:0:0")
	}
	for _, tc := range []struct {
		name, tool, args string
		kind             tool.ErrorKind // "" for success
		want             string         // in the output or the error
	}{
		{"valid call", "t_upper", `{"text":"hello, wasm"}`, "", "HELLO, WASM"},
		{"invalid arguments", "t_upper", `{"text":5}`, tool.KindInvalidArguments, "text"},
		{"unknown argument", "t_upper", `{"text":"a","rm":true}`, tool.KindInvalidArguments, "rm"},
		{"spinning module", "t_spin", `{}`, tool.KindTimeout, "stopped at its deadline of 300ms"},
		{"host file", "t_read", `{"path":"/etc/hostname"}`, tool.KindToolError, "module \"text\""},
		{"workspace file", "t_read", `{"path":"/hello.txt"}`, "", "hello from the workspace"},
		{"out of the workspace", "t_read", `{"path":"/../../../../etc/hostname"}`, tool.KindToolError, "module \"text\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(t.Context(), tc.tool, json.RawMessage(tc.args))
			if res.Kind != tc.kind || res.IsError != (tc.kind != "") {
				t.Fatalf("%s(%s) = %+v, want kind %q", tc.tool, tc.args, res, tc.kind)
			}
			if got := res.Output + res.Error; !strings.Contains(got, tc.want) {
				t.Errorf("%s(%s) gave %q, want %q in it", tc.tool, tc.args, got, tc.want)
			}
			if strings.Contains(res.Output+res.Error, strings.TrimSpace(string(host))) {
				t.Errorf("the module read a host file: %q", res.Output+res.Error)
			}
		})
	}
}
