package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// A Policy.ReadOnly path inside the workspace is a name the runs may
// change: one run replaced the directory tools with a symbolic link to a
// host directory outside every grant, and the next run's bind, made by
// the engine (root, on the host) from the path as written, followed the
// link and gave the container the host directory: it read a file there.
// The control shows what the bind gives: the same read with the host
// directory named as the read-only path reads the file, so a bind that
// followed the link would let the check below see it. With the check the
// second run, and a run whose read-only path is the plain directory in
// the workspace or a link outside leading into it, is refused before any
// container starts.
func TestContainerReadOnlyInWorkspace(t *testing.T) {
	c := requireEngine(t, false)
	ws, outside := t.TempDir(), t.TempDir()
	for _, d := range []string{ws, outside} {
		must(t, os.Chmod(d, 0o755))
	}
	must(t, os.Chown(ws, sandbox.DefaultUID, sandbox.DefaultUID))
	secret := filepath.Join(outside, "secret")
	must(t, os.WriteFile(secret, []byte("host secret"), 0o644))
	tools := filepath.Join(ws, "tools")
	must(t, os.Mkdir(tools, 0o755))
	must(t, os.Chown(tools, sandbox.DefaultUID, sandbox.DefaultUID))
	ctx := context.Background()

	r, err := c.Run(ctx, sandbox.Policy{Workspace: ws, ReadOnly: []string{outside}}, []string{"cat", secret}, nil)
	if err != nil || string(r.Stdout) != "host secret" {
		t.Fatalf("control: a bind of the host directory did not give its file: %v %+v", err, r)
	}

	p := sandbox.Policy{Workspace: ws, ReadOnly: []string{tools}}
	if r, err := c.Run(ctx, p, []string{"true"}, nil); err == nil || !strings.Contains(err.Error(), "lies in the workspace") {
		t.Fatalf("a read-only path in the workspace: %v %+v; want a refusal", err, r)
	}
	// The retargeting run (its own policy needs no read-only path).
	r, err = c.Run(ctx, sandbox.Policy{Workspace: ws}, []string{"sh", "-c", "rmdir tools && ln -s " + outside + " tools && echo done"}, nil)
	if err != nil || string(r.Stdout) != "done\n" {
		t.Fatalf("the run could not retarget tools: %v %+v", err, r)
	}
	r, err = c.Run(ctx, p, []string{"cat", filepath.Join(tools, "secret")}, nil)
	if err == nil || !strings.Contains(err.Error(), "lies in the workspace") {
		t.Fatalf("the read-only path retargeted by a run: %v %+v; want a refusal", err, r)
	}
	if r != nil && strings.Contains(string(r.Stdout), "host secret") {
		t.Fatal("the run read the host directory through the retargeted read-only path")
	}
	outer := filepath.Join(t.TempDir(), "tools")
	must(t, os.Symlink(tools, outer))
	if r, err := c.Run(ctx, sandbox.Policy{Workspace: ws, ReadOnly: []string{outer}}, []string{"true"}, nil); err == nil || !strings.Contains(err.Error(), "lies in the workspace") {
		t.Fatalf("a read-only link outside leading into the workspace: %v %+v; want a refusal", err, r)
	}
}
