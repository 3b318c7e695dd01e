package sandbox

import (
	"context"
	"strings"
	"testing"
)

// A backend with NativeOptions.Helper starts that program for its runs,
// cold and from spares. One built from other sources (here, the same
// sources with another protocol linked in) refuses every run instead of
// running the command, and a path that is not absolute is refused before
// anything starts: a helper program never runs a command with layers other
// than the configuration says.
func TestHelperProgram(t *testing.T) {
	requireSandbox(t)
	good := BuildHelperProgram(t, "")
	stale := BuildHelperProgram(t, "-X github.com/miniopenclaw/tool/sandbox/internal/helper.protocol=0123456789abcdef")
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		program string
		wantErr string // "" for a run that succeeds
	}{
		{"same sources", good, ""},
		{"other sources", stale, "built from other sources"},
		{"relative path", "clawtool-sandbox-helper", "is not an absolute path"},
	} {
		for _, spares := range []int{0, 1} {
			t.Run(tt.name+map[int]string{0: "/cold", 1: "/spare"}[spares], func(t *testing.T) {
				n := newTestNative(t, NativeOptions{Spares: spares, Helper: tt.program}, nil)
				for i := range 3 { // the first run is cold; then from a spare when there is one
					r, err := runOn(n, ctx, Policy{}, "/bin/sh", "-c", "echo ok")
					if tt.wantErr == "" {
						if err != nil || !r.OK() || strings.TrimSpace(string(r.Stdout)) != "ok" {
							t.Fatalf("run %d: %v %+v", i, err, r)
						}
						continue
					}
					if err == nil && r.OK() {
						t.Fatalf("run %d ran its command: %+v", i, r)
					}
					msg := ""
					if err != nil {
						msg = err.Error()
					} else {
						msg = string(r.Stderr)
					}
					if !strings.Contains(msg, tt.wantErr) {
						t.Fatalf("run %d: %v %+v; want an error saying %q", i, err, r, tt.wantErr)
					}
					n.settle()
				}
			})
		}
	}
}
