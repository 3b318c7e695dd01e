package container

import (
	"context"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// TestContainerShmBounded: a container's /dev/shm is a tmpfs of its own
// (the engine's default is 64 MiB), writable by every user, beside the
// /tmp that Limits.Tmp and Limits.WriteBytes bound: a call wrote 8 MiB
// there under a 1 MiB budget (and a warm container keeps it between
// calls). It must be bounded as /tmp is. The control writes the same
// into the workspace-less /tmp and is refused at the budget, as it was.
func TestContainerShmBounded(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			p := sandbox.Policy{Limits: sandbox.Limits{Tmp: 1 << 20}}
			for _, dir := range []string{"/tmp", "/dev/shm"} {
				r, err := c.Run(context.Background(), p, []string{"sh", "-c", "dd if=/dev/zero of=" + dir + "/fill bs=1024 count=8192 2>&1; rm -f " + dir + "/fill"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(strings.ToLower(string(r.Stdout)+string(r.Stderr)), "no space left") {
					t.Errorf("8 MiB into %s under a 1 MiB budget: %s %q %q, want no space left on device", dir, r.Summary(), r.Stdout, r.Stderr)
				}
			}
		})
	}
}
