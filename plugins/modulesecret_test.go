package plugins

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// TestModuleSecretReference: a WebAssembly module's environment refuses
// names that look like secrets, and a module has no "secrets" to consent
// with: no secret of the host's environment is meant to reach it. The
// attack renames one, "env": {"DB": "${..._DB_PASSWORD}"}: before the
// fix the module read the host's password (the sandbox checks names and
// known token formats, and an opaque password is neither). The module
// now fails alone, naming the reference, never the value; the control,
// the same module given a variable whose name is not a secret's, reads
// it, so the route is live.
func TestModuleSecretReference(t *testing.T) {
	const password, plain = "opaque-module-password-31337", "plain-value-4242"
	t.Setenv("CLAWTOOL_TEST_DB_PASSWORD", password)
	t.Setenv("CLAWTOOL_TEST_DB_HOST", plain)
	mod := func(prefix, ref string) map[string]any {
		return map[string]any{"path": toolModule(t), "prefix": prefix, "env": map[string]string{"DB": "${" + ref + "}"},
			"tools": []map[string]any{{"name": "getenv", "description": "Reads a variable.",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}
	}
	b, _ := json.Marshal(map[string]any{"wasmModules": map[string]any{
		"renamed": mod("renamed_", "CLAWTOOL_TEST_DB_PASSWORD"),
		"control": mod("control_", "CLAWTOOL_TEST_DB_HOST"),
	}})
	file := filepath.Join(t.TempDir(), "config.json")
	writeConfig(t, file, b)
	reg := tool.NewRegistry()
	h := NewHost(reg, WithCacheDir(compileCache(t)), WithConnectTimeout(3*time.Minute)) // ok-wallclock: a failure bound
	defer h.Close()
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if res := reg.Execute(t.Context(), "renamed_getenv", json.RawMessage(`{"name": "DB"}`)); strings.Contains(res.Output, password) {
		t.Errorf("the host's password reached the module under another name: %q", res.Output)
	}
	if r := st["renamed"]; r.State != Failed || !strings.Contains(r.Err, "${CLAWTOOL_TEST_DB_PASSWORD}") || strings.Contains(r.Err, password) {
		t.Errorf("renamed: %+v", r)
	}
	if res := reg.Execute(t.Context(), "control_getenv", json.RawMessage(`{"name": "DB"}`)); res.IsError || res.Output != "="+plain {
		t.Errorf("control: %+v %+v", res, st["control"])
	}
}
