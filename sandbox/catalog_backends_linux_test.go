package sandbox_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
)

// testImage is the image .ci/docker-engine.sh builds from busybox-static.
const testImage = "clawtool-test/busybox:1"

// TestCatalogAContainer runs the attack catalog against the container
// backend in each of its modes.
func TestCatalogAContainer(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts container.Options
		mode sandbox.Mode
	}{
		{"fresh", container.Options{}, sandbox.ModeFresh},
		{"warm", container.Options{Warm: true}, sandbox.ModeWarmServer},
		{"warm-exec", container.Options{Warm: true, WarmExec: true}, sandbox.ModeWarmExec},
	} {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngine(t, mode.opts)
			sandbox.RunCatalogIn(t, c, container.Workspace, mode.mode)
		})
	}
}

// requireEngine returns a container backend on the engine found through
// DOCKER_HOST or the default socket, closed when the test ends. Without an
// engine or the test image it fails in CI, where .ci/docker-engine.sh
// provides both, and skips elsewhere with the reason.
func requireEngine(t *testing.T, opts container.Options) *container.Backend {
	t.Helper()
	opts.Image, opts.Owner = testImage, "clawtool-sandbox-catalog"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // ok-wallclock
	defer cancel()
	c, err := container.New(ctx, opts)
	if err == nil {
		var r *sandbox.Result
		if r, err = c.Run(ctx, sandbox.Policy{}, []string{"true"}, nil); err == nil && !r.OK() {
			err = os.ErrInvalid
		}
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		reason := err.Error() + " (run .ci/docker-engine.sh)"
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}
