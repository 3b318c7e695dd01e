package policy

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/miniopenclaw/tool"
)

// typedArgs are arguments of the names randomExpr reads, bound to a
// plain struct, so that tool.AccessRequest.Argument answers for them.
type typedArgs struct {
	A    string `json:"a,omitempty"`
	B    string `json:"b"`
	Path string `json:"path,omitempty"`
	N    int    `json:"n,omitzero"`
	F    bool   `json:"f,omitempty"`
	U    uint8  `json:"u"`
}

// keepRequest is an Authorizer that keeps the last request it was asked
// about and lets every call run.
type keepRequest struct{ req tool.AccessRequest }

func (k *keepRequest) DefersArgs() bool { return true }
func (k *keepRequest) Authorize(ctx context.Context, req tool.AccessRequest) error {
	k.req = req
	return nil
}

// typedDifferential is fastDifferential for calls of typed tools, whose
// arguments the fast path reads through tool.AccessRequest.Argument: for
// one seed, each call's decision (effect, policies, reason, errors and
// the digest binding all its arguments) equals the decision on the same
// arguments given as JSON and Cedar's over the whole set, and each answer
// the fast path gives from the accessor is that decision. It returns how
// many calls the fast path answered from the accessor, and how many could
// have been asked.
func typedDifferential(t testing.TB, seed uint64) (checked, total int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x7f4a7c159e3779b9))
	a, src := randomAuthorizer(t, seed, rng)
	keep := &keepRequest{}
	reg := tool.NewRegistry(tool.WithAuthorizer(keep))
	for _, name := range []string{"t0", "t1"} {
		reg.Register(tool.Must(tool.New(name, "T.", func(ctx context.Context, a typedArgs) (string, error) { return "", nil }, tool.WithInline())))
	}
	strs := []string{"x", "docs/a", "docs/../secrets/k", "", "a*b", `x"y`, "secrets/k", "my-secret", "é<&>", "a\\*b"}
	users := []Principal{{ID: "u0", Roles: []string{"r0"}}, {ID: "u1", Attrs: map[string]any{"tenant": "x"}}}
	for range 20 {
		v := typedArgs{A: strs[rng.IntN(len(strs))], B: strs[rng.IntN(len(strs))], Path: strs[rng.IntN(len(strs))],
			N: rng.IntN(7) - 2, F: rng.IntN(2) == 0, U: uint8(rng.IntN(3))}
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			ctx := WithPrincipal(context.Background(), u)
			for _, name := range []string{"t0", "t1"} {
				if res := reg.Execute(ctx, name, js); res.IsError {
					t.Fatalf("seed %d: %s %s: %s", seed, name, js, res.Error)
				}
				req := keep.req
				raw, err := req.Arguments()
				if err != nil {
					t.Fatal(err)
				}
				asJSON := tool.AccessRequest{Tool: req.Tool, Name: name, Options: req.Options, Args: raw} // the same tool, its arguments as JSON
				want := reference(a, u, true, asJSON)
				for _, got := range []Decision{a.Decide(ctx, req), a.Decide(ctx, asJSON)} {
					if got.Effect != want.Effect || !slices.Equal(got.Policies, want.Policies) || got.Reason != want.Reason || !slices.Equal(got.Errors, want.Errors) {
						t.Fatalf("seed %d: %s %s %s:\n got %+v\nwant %+v\npolicies:\n%s", seed, u.ID, name, raw, got, want, src)
					}
				}
				if d, dj := a.Decide(ctx, req), a.Decide(ctx, asJSON); d.Digest != dj.Digest || string(d.Args) != string(dj.Args) {
					t.Fatalf("seed %d: %s %s %s: bound to %s %s, as JSON to %s %s", seed, u.ID, name, raw, d.Args, d.Digest, dj.Args, dj.Digest)
				}
				v := a.verdict(a.set.Load(), a.subject(ctx), name, req.Options.Annotations)
				if v.static {
					continue
				}
				total++
				p := fastFor(v)
				if p == nil {
					continue
				}
				if !p.ReadsChecked(&req, a.paths) {
					continue
				}
				if a.checkPaths(&req) != nil {
					continue // decide refuses it before the fast path
				}
				fd := Decision{Principal: u, Tool: name}
				ok := a.decideFast(v, &fd, &req)
				if !ok {
					continue
				}
				checked++
				if fd.Effect != want.Effect || !slices.Equal(fd.Policies, want.Policies) || fd.Reason != want.Reason || len(want.Errors) > 0 {
					t.Fatalf("seed %d: fast path from the accessor, %s %s %s:\n got %+v\nwant %+v\npolicies:\n%s", seed, u.ID, name, raw, fd, want, src)
				}
			}
		}
	}
	return checked, total
}

// TestFastPathFromArgumentMatchesCedar runs the typed differential over
// many seeds: the fast path fed by tool.AccessRequest.Argument.
func TestFastPathFromArgumentMatchesCedar(t *testing.T) {
	runDifferential(t, 400, 80, " from tool.AccessRequest.Argument", typedDifferential)
}

// FuzzFastPathFromArgument is the typed differential driven by the
// fuzzer's seed; its corpus runs with the tests.
func FuzzFastPathFromArgument(f *testing.F) {
	for _, s := range differentialSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { typedDifferential(t, seed) })
}

// TestFastPathReadsChecked pins where the fast path reads a call's
// arguments from: the accessor for a typed plain struct, the JSON for a
// request made by hand or a tool whose arguments the accessor declines.
func TestFastPathReadsChecked(t *testing.T) {
	type nested struct {
		A string         `json:"a"`
		M map[string]int `json:"m,omitempty"`
	}
	a, err := New("p.cedar", []byte(`@id("p") permit (principal, action, resource) when { context.args.a like "x*" };`))
	if err != nil {
		t.Fatal(err)
	}
	keep := &keepRequest{}
	reg := tool.NewRegistry(tool.WithAuthorizer(keep))
	reg.Register(tool.Must(tool.New("plain", "P.", func(ctx context.Context, a typedArgs) (string, error) { return "", nil })))
	reg.Register(tool.Must(tool.New("nested", "N.", func(ctx context.Context, a nested) (string, error) { return "", nil })))
	ctx := WithPrincipal(context.Background(), Principal{ID: "u"})
	for _, tc := range []struct {
		name, tool, args string
		checked          bool
		effect           Effect
	}{
		{"plain struct", "plain", `{"a":"xy","b":"","u":0}`, true, Allow},
		{"plain struct, absent", "plain", `{"b":"","u":0}`, true, Deny},
		{"nested struct", "nested", `{"a":"xy"}`, false, Allow},
		{"by hand", "", `{"a":"xy"}`, false, Allow},
	} {
		req := tool.AccessRequest{Name: "t", Args: json.RawMessage(tc.args)}
		if tc.tool != "" {
			if res := reg.Execute(ctx, tc.tool, json.RawMessage(tc.args)); res.IsError {
				t.Fatalf("%s: %s", tc.name, res.Error)
			}
			req = keep.req
		}
		if d := a.Decide(ctx, req); d.Effect != tc.effect {
			t.Errorf("%s: %s, want %s", tc.name, d.Effect, tc.effect)
		}
		v := a.verdict(a.set.Load(), a.subject(ctx), req.Name, req.Options.Annotations)
		if got := fastFor(v).ReadsChecked(&req, a.paths); got != tc.checked {
			t.Errorf("%s: read through the accessor: %v, want %v", tc.name, got, tc.checked)
		}
	}
}
