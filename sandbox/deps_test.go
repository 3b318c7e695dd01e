package sandbox_test

import (
	"os/exec"
	"strings"
	"testing"
)

// engineModules are the module paths of a container engine's client: a
// program that only runs native commands must not link them.
var engineModules = []string{"github.com/moby/", "github.com/docker/", "github.com/containerd/"}

// TestNativeLinksNoEngineClient lists the dependencies of package sandbox
// and of the packages a native-only program builds on (sandbox/workspace,
// sandbox/wasm) and fails if any container engine client is among them.
// The control is package sandbox/container, which must link one.
func TestNativeLinksNoEngineClient(t *testing.T) {
	for _, tc := range []struct {
		pkg    string
		engine bool
	}{
		{"github.com/miniopenclaw/tool/sandbox", false},
		{"github.com/miniopenclaw/tool/sandbox/workspace", false},
		{"github.com/miniopenclaw/tool/sandbox/wasm", false},
		{"github.com/miniopenclaw/tool/sandbox/container", true},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		var engine []string
		for dep := range strings.Lines(string(out)) {
			for _, m := range engineModules {
				if strings.HasPrefix(dep, m) {
					engine = append(engine, strings.TrimSpace(dep))
				}
			}
		}
		if tc.engine && len(engine) == 0 {
			t.Errorf("control: %s links no engine client; the check finds nothing", tc.pkg)
		}
		if !tc.engine && len(engine) > 0 {
			t.Errorf("%s links the container engine's client: %v", tc.pkg, engine)
		}
	}
}
