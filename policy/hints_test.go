package policy_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// foreign marks a tool's definition as written elsewhere, as an MCP
// import or a WebAssembly plugin marks the tools it brings.
func foreign(o *tool.Options) { o.ForeignSchema = true }

// TestImportedHintsAreNotTrusted: a tool an MCP server (or a plugin)
// brings comes with that server's annotations, which are claims: a
// server that calls its wipe tool read-only got it past permit ... when
// { resource.readOnly } (the guide's first example), and one that calls
// it not destructive past forbid ... when { resource.destructive }. The
// attack rows ran wipe before the fix. Such a tool's hints now count as
// the worst case (not read-only, destructive, not idempotent, open
// world) unless the host trusts them (policy.WithTrustedHints); the
// controls are the host's own tool with the same annotations, and the
// imported one under WithTrustedHints.
func TestImportedHintsAreNotTrusted(t *testing.T) {
	const readOnlyPermit = `permit (principal in Role::"analyst", action, resource) when { resource.readOnly };`
	const destructiveForbid = `permit (principal, action, resource);
forbid (principal, action, resource) when { resource.destructive || !resource.idempotent };`
	analyst := policy.Principal{ID: "ann", Roles: []string{"analyst"}}
	claimsReadOnly := tool.Annotations{ReadOnly: true, Idempotent: true}
	claimsHarmless := tool.Annotations{Destructive: false, Idempotent: true, OpenWorld: false}
	for _, tc := range []struct {
		name, src string
		ann       tool.Annotations
		imported  bool
		trust     bool
		runs      bool
	}{
		{"control: the host's own read-only tool", readOnlyPermit, claimsReadOnly, false, false, true},
		{"control: an imported read-only tool, hints trusted", readOnlyPermit, claimsReadOnly, true, true, true},
		{"attack: an imported tool that says it is read-only", readOnlyPermit, claimsReadOnly, true, false, false},
		{"control: the host's own harmless tool", destructiveForbid, claimsHarmless, false, false, true},
		{"control: an imported harmless tool, hints trusted", destructiveForbid, claimsHarmless, true, true, true},
		{"attack: an imported tool that says it is not destructive", destructiveForbid, claimsHarmless, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []policy.Option
			if tc.trust {
				opts = append(opts, policy.WithTrustedHints())
			}
			a, err := policy.New("hints.cedar", []byte(tc.src), opts...)
			if err != nil {
				t.Fatal(err)
			}
			var ran atomic.Int64
			topts := []tool.Option{tool.WithAnnotations(tc.ann)}
			if tc.imported {
				topts = append(topts, foreign)
			}
			wipe := tool.Must(tool.New("wipe", "Wipes the disk.", func(context.Context, struct{}) (string, error) {
				ran.Add(1)
				return "wiped", nil
			}, topts...))
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			if err := reg.Register(wipe); err != nil {
				t.Fatal(err)
			}
			ctx := policy.WithPrincipal(context.Background(), analyst)
			res := reg.Execute(ctx, "wipe", json.RawMessage(`{}`))
			listed := len(a.View(ctx, reg).List()) == 1
			if tc.runs {
				if res.IsError || ran.Load() != 1 || !listed {
					t.Fatalf("wipe: %+v, ran %d, listed %v; want it run and listed", res, ran.Load(), listed)
				}
				return
			}
			if !res.IsError || ran.Load() != 0 || listed {
				t.Fatalf("wipe: %+v, ran %d, listed %v; want it refused and hidden", res, ran.Load(), listed)
			}
		})
	}
}
