package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestTrustHintsFlag: under --policy a tool imported from an MCP server
// or a plugin (its definition written elsewhere) is judged as the worst
// case, whatever its server says of it; --trust-hints reads its
// annotations as stated. The control is the host's own tool, whose
// annotations count either way.
func TestTrustHintsFlag(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "ro.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal in Role::"analyst", action, resource) when { resource.readOnly };`), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := tool.Annotations{ReadOnly: true}
	imported := tool.Options{Annotations: readOnly, ForeignSchema: true}
	own := tool.Options{Annotations: readOnly}
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"analyst"}})
	for _, tc := range []struct {
		trust         bool
		imported, own bool
	}{
		{false, false, true},
		{true, true, true},
	} {
		pf := &policyFlags{file: pol, trustHints: tc.trust}
		pf.approvals = policy.NewMemoryApprovalStore()
		a, err := pf.authorizer()
		if err != nil {
			t.Fatal(err)
		}
		if got := a.CanList(ctx, "wipe", imported); got != tc.imported {
			t.Errorf("--trust-hints=%v: an imported tool that says it is read-only listed %v, want %v", tc.trust, got, tc.imported)
		}
		if got := a.CanList(ctx, "read", own); got != tc.own {
			t.Errorf("--trust-hints=%v: the host's read-only tool listed %v, want %v", tc.trust, got, tc.own)
		}
	}
}
