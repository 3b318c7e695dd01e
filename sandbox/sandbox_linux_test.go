package sandbox

import (
	"os"
	"testing"
)

// requireSandbox stops a test that needs root and every layer: it fails in
// CI, where both are present, and skips elsewhere with the reason.
func requireSandbox(t testing.TB) {
	t.Helper()
	reason := ""
	if os.Geteuid() != 0 {
		reason = "the catalog tests need root (to give the workspace to the sandbox user)"
	} else if err := Probe().check(append(RequiredLayers(), LayerNetNS)); err != nil {
		reason = err.Error()
	}
	if reason == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}
