package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/miniopenclaw/tool/plugins"
)

// TestReadFilePermissionsPath: ReadFile resolves "permissions" against
// the configuration file's directory, as it resolves the other paths it
// names, and leaves an absolute path as it is.
func TestReadFilePermissionsPath(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "elsewhere", "p.cedar")
	for _, tc := range []struct{ permissions, want string }{
		{"policies/p.cedar", filepath.Join(dir, "policies", "p.cedar")},
		{"../p.cedar", filepath.Join(filepath.Dir(dir), "p.cedar")},
		{abs, abs},
		{"", ""},
	} {
		file := filepath.Join(dir, "clawtool.json")
		if err := os.WriteFile(file, []byte(`{"mcpServers":{},"permissions":"`+tc.permissions+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := plugins.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if c.Permissions != tc.want {
			t.Errorf("%q: Permissions = %q, want %q", tc.permissions, c.Permissions, tc.want)
		}
	}
}
