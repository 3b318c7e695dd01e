package container

import (
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// TestContainerRefusesAllowList: the container backend cannot hand the
// proxy to a container yet, so it refuses NetworkAllow before it touches
// the engine (fail closed); the control is the same policy's
// validation, which passes.
func TestContainerRefusesAllowList(t *testing.T) {
	p := sandbox.Policy{Network: sandbox.NetworkAllow, Allow: []sandbox.HostRule{{Host: "listed.test"}}}
	if err := p.Validate(); err != nil {
		t.Fatalf("control: Validate() = %v", err)
	}
	_, err := (&Backend{}).Run(t.Context(), p, []string{"true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot enforce network") {
		t.Fatalf("Backend.Run under an allow list = %v, want the refusal", err)
	}
}
