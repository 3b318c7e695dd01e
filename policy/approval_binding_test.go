package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

type chmodArgs struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// TestAskOnOneArgumentBindsAll: an approval binds every argument of the
// call, including those no policy reads. The asking policies here read
// only path (or nothing), so a decision needs only path; the approval
// must still be for the call's mode too.
func TestAskOnOneArgumentBindsAll(t *testing.T) {
	for _, tc := range []struct {
		name, src string
	}{
		{"ask reads path", `@id("ask-path") @effect("ask") permit (principal, action, resource) when { context.args.path like "docs/*" };`},
		{"ask reads path, forbid reads path", `@id("ask-path") @effect("ask") permit (principal, action, resource) when { context.args.path like "docs/*" };
			forbid (principal, action, resource) when { context.args.path == "docs/secret" };`},
		{"ask reads nothing (cached)", `@id("ask-all") @effect("ask") permit (principal, action, resource);`},
		{"ask reads nothing, permit reads path", `@id("ask-all") @effect("ask") permit (principal, action, resource);
			permit (principal, action, resource) when { context.args.path like "docs/*" };`},
	} {
		// Without an audit log, nothing reads the arguments before the
		// decision: one the fast path takes from the argument it reads
		// must still bind them all.
		for _, audited := range []bool{true, false} {
			name, opts := tc.name+", no audit", []policy.Option(nil)
			if audited {
				name = tc.name
			}
			t.Run(name, func(t *testing.T) {
				var audit bytes.Buffer
				if audited {
					opts = append(opts, policy.WithAudit(policy.NewAuditLog(&audit)))
				}
				a, err := policy.New("p.cedar", []byte(tc.src), opts...)
				if err != nil {
					t.Fatal(err)
				}
				ran := 0
				reg := tool.NewRegistry(tool.WithAuthorizer(a))
				if err := reg.Register(tool.Must(tool.New("chmod", "Changes a mode.", func(ctx context.Context, a chmodArgs) (string, error) {
					ran++
					return "ok", nil
				}))); err != nil {
					t.Fatal(err)
				}
				ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
				call := func(args string) tool.Result { return reg.Execute(ctx, "chmod", json.RawMessage(args)) }
				request := func(res tool.Result) policy.ApprovalRequest {
					t.Helper()
					req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
					if res.Kind != tool.KindDenied || !ok {
						t.Fatalf("result = %+v, want an approval request", res)
					}
					return req
				}

				x := request(call(`{"path":"docs/a","mode":"x"}`))
				if string(x.Args) != `{"mode":"x","path":"docs/a"}` {
					t.Errorf("request args = %s, want all the arguments", x.Args)
				}
				y := request(call(`{"path":"docs/a","mode":"y"}`))
				if x.Digest == y.Digest {
					t.Fatalf("calls differing in mode share the digest %s", x.Digest)
				}
				if err := a.Grant(x.ID); err != nil {
					t.Fatal(err)
				}
				// The approval for mode x does not let mode y run, and stays unused.
				request(call(`{"path":"docs/a","mode":"y"}`))
				if ran != 0 {
					t.Fatalf("a call with another mode ran on mode x's approval")
				}
				if res := call(`{"mode":"x","path":"docs/a"}`); res.IsError {
					t.Fatalf("approved call: %+v", res)
				}
				// Replay fails.
				request(call(`{"path":"docs/a","mode":"x"}`))
				if ran != 1 {
					t.Fatalf("ran %d times, want 1", ran)
				}

				if !audited {
					return
				}
				// Every decision record's digests cover all the arguments: the
				// records of the two modes differ, and the approved call's
				// decision and outcome agree.
				byMode := map[string]map[string]bool{}
				for line := range strings.SplitSeq(strings.TrimSpace(audit.String()), "\n") {
					var rec policy.AuditRecord
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Fatal(err)
					}
					mode := "y"
					if rec.CallDigest == x.Digest {
						mode = "x"
					} else if rec.CallDigest != y.Digest {
						t.Errorf("record %d has digest %s, neither call's", rec.Seq, rec.CallDigest)
					}
					if byMode[mode] == nil {
						byMode[mode] = map[string]bool{}
					}
					byMode[mode][rec.ArgsDigest] = true
				}
				if len(byMode["x"]) != 1 || len(byMode["y"]) != 1 {
					t.Errorf("argument digests by mode: %v", byMode)
				}
				for d := range byMode["x"] {
					if byMode["y"][d] {
						t.Errorf("both modes have the argument digest %s", d)
					}
				}
			})
		}
	}
}

// TestAuditDigestsAllArguments: a decision record's digests cover every
// argument of the call, also when the deciding policies read only one.
func TestAuditDigestsAllArguments(t *testing.T) {
	for _, tc := range []struct{ name, src, effect string }{
		{"deny", `forbid (principal, action, resource) when { context.args.path like "secrets/*" }; permit (principal, action, resource);`, "deny"},
		{"allow", `permit (principal, action, resource) when { context.args.path like "secrets/*" };`, "allow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var audit bytes.Buffer
			a, err := policy.New("p.cedar", []byte(tc.src), policy.WithAudit(policy.NewAuditLog(&audit)))
			if err != nil {
				t.Fatal(err)
			}
			ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
			var digests []string
			for _, args := range []string{`{"path":"secrets/a","mode":"x"}`, `{"path":"secrets/a","mode":"y"}`} {
				d := a.Decide(ctx, tool.AccessRequest{Name: "chmod", Args: json.RawMessage(args)})
				if string(d.Effect) != tc.effect {
					t.Fatalf("%s: effect %s, want %s", args, d.Effect, tc.effect)
				}
				_ = a.Authorize(ctx, tool.AccessRequest{Name: "chmod", Args: json.RawMessage(args)})
			}
			for line := range strings.SplitSeq(strings.TrimSpace(audit.String()), "\n") {
				var rec policy.AuditRecord
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				digests = append(digests, rec.ArgsDigest, rec.CallDigest)
			}
			if len(digests) != 4 || digests[0] == digests[2] || digests[1] == digests[3] {
				t.Errorf("digests of calls differing in mode: %v", digests)
			}
		})
	}
}
