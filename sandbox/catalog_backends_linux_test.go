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

// TestCatalog is the attack catalog's one conformance run: every backend
// value, each row with its positive control and host-side check. A row
// that does not apply to a backend says why in the catalog table
// (catalogRow.noContainer); a backend none of whose rows apply says why
// here.
func TestCatalog(t *testing.T) {
	for _, b := range []struct {
		name string
		// open returns the backend, or notApplicable says why no row runs.
		open          func(t testing.TB) sandbox.CatalogBackend
		notApplicable string
	}{
		{name: "native", open: func(testing.TB) sandbox.CatalogBackend {
			n := sandbox.DefaultNative()
			return sandbox.CatalogBackend{Backend: n, Mode: sandbox.ModeNative, Forker: n.ForkerPid}
		}},
		// The same helper code, as the program of its own that
		// NativeOptions.Helper names: every row holds for it too.
		{name: "native-helper-program", open: func(t testing.TB) sandbox.CatalogBackend {
			n := sandbox.NewNative(sandbox.NativeOptions{Spares: sandbox.DefaultSpares, Helper: sandbox.BuildHelperProgram(t, "")})
			t.Cleanup(func() { n.Close() })
			return sandbox.CatalogBackend{Backend: n, Mode: sandbox.ModeNative, Forker: n.ForkerPid}
		}},
		{name: "container-fresh", open: containerBackend(container.Options{}, sandbox.ModeFresh)},
		{name: "container-warm", open: containerBackend(container.Options{Warm: true}, sandbox.ModeWarmServer)},
		{name: "container-warm-exec", open: containerBackend(container.Options{Warm: true, WarmExec: true}, sandbox.ModeWarmExec)},
		{name: "wasm", notApplicable: "the catalog's attacker is this test binary, a Linux program that attacks through system calls; a WebAssembly module has none, only the WASI imports package wasm grants, so its attacks (files outside its root, memory, output, the deadline, secrets in the environment) are wasm's own table tests (TestRunOutcomes, TestFilesThroughRoot, TestMemoryPageLimit, TestEnvironmentRefusesSecrets, TestModuleLimits)"},
	} {
		t.Run(b.name, func(t *testing.T) {
			if b.notApplicable != "" {
				t.Log("no row applies:", b.notApplicable)
				return
			}
			sandbox.RunCatalog(t, b.open(t))
		})
	}
}

// containerBackend opens a container backend with opts on the engine found
// through DOCKER_HOST or the default socket, closed when the test ends.
// Without an engine or the test image it fails in CI, where
// .ci/docker-engine.sh provides both, and skips elsewhere with the reason.
func containerBackend(opts container.Options, mode sandbox.Mode) func(t testing.TB) sandbox.CatalogBackend {
	return func(t testing.TB) sandbox.CatalogBackend {
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
		return sandbox.CatalogBackend{Backend: c, Container: true, Workspace: container.Workspace, Mode: mode}
	}
}
