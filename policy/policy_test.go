package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

const testPolicies = `
@id("viewers-read")
permit (principal in Role::"viewer", action == Action::"call", resource)
when { resource.readOnly };

@id("editors-write-docs")
permit (principal in Role::"editor", action == Action::"call", resource == Tool::"write_file")
when { context.args.path like "docs/*" };

@id("editors-delete-ask")
@effect("ask")
permit (principal in Role::"editor", action == Action::"call", resource == Tool::"delete_file");

@id("admins-all")
permit (principal in Role::"admin", action, resource);

@id("no-secrets")
@reason("you may not touch paths under secrets/; use paths under docs/")
forbid (principal, action, resource)
when { context.args has path && context.args.path like "secrets/*" };

@id("search-english")
permit (principal in Role::"viewer", action == Action::"call", resource == Tool::"search")
when { context.args has opts && context.args.opts.lang == "en" && context.args.limit <= 20 };

@id("no-reset")
forbid (principal, action, resource == Tool::"admin_reset")
unless { principal in Role::"admin" };

@id("tenant-a-reports")
permit (principal, action == Action::"call", resource == Tool::"report")
when { principal has tenant && principal.tenant == "a" };
`

var roleParents = map[string][]string{"admin": {"editor"}, "editor": {"viewer"}}

type pathArgs struct {
	Path string `json:"path"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type searchOpts struct {
	Lang string `json:"lang,omitempty" default:"en"`
}

type searchArgs struct {
	Query string     `json:"query"`
	Limit int        `json:"limit,omitempty" default:"10"`
	Opts  searchOpts `json:"opts,omitzero"`
}

// testRegistry returns a registry of the fixture tools decided by a, and
// a counter of the calls that ran.
func testRegistry(t testing.TB, a tool.Authorizer) (*tool.Registry, *sync.Map) {
	t.Helper()
	var ran sync.Map
	done := func(name string) { v, _ := ran.LoadOrStore(name, new(atomic.Int64)); v.(*atomic.Int64).Add(1) }
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	must := func(tl tool.Tool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	must(tool.New("read_file", "Reads a file.", func(ctx context.Context, a pathArgs) (string, error) { done("read_file"); return "content", nil },
		tool.WithAnnotations(tool.Annotations{ReadOnly: true}), tool.WithInline()))
	must(tool.New("write_file", "Writes a file.", func(ctx context.Context, a writeArgs) (string, error) { done("write_file"); return "ok", nil }))
	must(tool.New("delete_file", "Deletes a file.", func(ctx context.Context, a pathArgs) (string, error) { done("delete_file"); return "ok", nil },
		tool.WithAnnotations(tool.Annotations{Destructive: true})))
	must(tool.New("admin_reset", "Resets.", func(ctx context.Context, a struct{}) (string, error) { done("admin_reset"); return "ok", nil }))
	must(tool.New("search", "Searches.", func(ctx context.Context, a searchArgs) (string, error) { done("search"); return "ok", nil }))
	must(tool.New("report", "Reports.", func(ctx context.Context, a struct{}) (string, error) { done("report"); return "ok", nil }))
	return reg, &ran
}

func newTestAuthorizer(t testing.TB, opts ...policy.Option) *policy.Authorizer {
	t.Helper()
	a, err := policy.New("test.cedar", []byte(testPolicies), append([]policy.Option{policy.WithRoleParents(roleParents)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	alice = policy.Principal{ID: "alice", Roles: []string{"admin"}}
	bob   = policy.Principal{ID: "bob", Roles: []string{"editor"}}
	carol = policy.Principal{ID: "carol", Roles: []string{"viewer"}, Attrs: map[string]any{"tenant": "a"}}
	dave  = policy.Principal{ID: "dave", Attrs: map[string]any{"tenant": "b"}}
)

func TestDecisionTable(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, _ := testRegistry(t, a)
	tests := []struct {
		who      *policy.Principal // nil: no principal
		tool     string
		args     string
		effect   policy.Effect
		policies []string
	}{
		// Roles inherited through the hierarchy: admin ⊂ editor ⊂ viewer.
		{&carol, "read_file", `{"path":"docs/a"}`, policy.Allow, []string{"viewers-read"}},
		{&bob, "read_file", `{"path":"docs/a"}`, policy.Allow, []string{"viewers-read"}},
		{&alice, "read_file", `{"path":"docs/a"}`, policy.Allow, []string{"admins-all", "viewers-read"}},
		{nil, "read_file", `{"path":"docs/a"}`, policy.Deny, nil},
		{&dave, "read_file", `{"path":"docs/a"}`, policy.Deny, nil},
		// Conditions on arguments.
		{&bob, "write_file", `{"path":"docs/a","content":"x"}`, policy.Allow, []string{"editors-write-docs"}},
		{&bob, "write_file", `{"path":"src/a","content":"x"}`, policy.Deny, nil},
		{&carol, "write_file", `{"path":"docs/a","content":"x"}`, policy.Deny, nil},
		// Forbid overrides permit, for everyone, admins included.
		{&carol, "read_file", `{"path":"secrets/k"}`, policy.Deny, []string{"no-secrets"}},
		{&alice, "write_file", `{"path":"secrets/k","content":"x"}`, policy.Deny, []string{"no-secrets"}},
		{&alice, "admin_reset", `{}`, policy.Allow, []string{"admins-all"}},
		{&bob, "admin_reset", `{}`, policy.Deny, []string{"no-reset"}},
		// Ask wins over allow: alice is an editor too.
		{&bob, "delete_file", `{"path":"docs/a"}`, policy.Ask, []string{"editors-delete-ask"}},
		{&alice, "delete_file", `{"path":"docs/a"}`, policy.Ask, []string{"editors-delete-ask"}},
		{&alice, "delete_file", `{"path":"secrets/a"}`, policy.Deny, []string{"no-secrets"}},
		{&carol, "delete_file", `{"path":"docs/a"}`, policy.Deny, nil},
		// Conditions on nested and defaulted arguments: opts.lang and
		// limit are filled in from their defaults before the policy runs.
		// Without opts the tool sees no opts (defaults apply inside objects
		// that are present), and neither does the policy.
		{&carol, "search", `{"query":"q"}`, policy.Deny, nil},
		{&carol, "search", `{"query":"q","opts":{}}`, policy.Allow, []string{"search-english"}},
		{&carol, "search", `{"query":"q","opts":{"lang":"fr"}}`, policy.Deny, nil},
		{&carol, "search", `{"query":"q","limit":50}`, policy.Deny, nil},
		// Principal attributes.
		{&carol, "report", `{}`, policy.Allow, []string{"tenant-a-reports"}},
		{&dave, "report", `{}`, policy.Deny, nil},
	}
	for _, tt := range tests {
		who := "anonymous"
		ctx := context.Background()
		if tt.who != nil {
			who = tt.who.ID
			ctx = policy.WithPrincipal(ctx, *tt.who)
		}
		t.Run(fmt.Sprintf("%s/%s/%s", who, tt.tool, tt.args), func(t *testing.T) {
			tl, _ := reg.Get(tt.tool)
			args := checkedArgs(t, reg, tt.tool, tt.args)
			d := a.Decide(ctx, tool.AccessRequest{Tool: tl, Name: tt.tool, Options: tool.OptionsOf(tl), Args: args})
			slices.Sort(d.Policies)
			if d.Effect != tt.effect || !slices.Equal(d.Policies, tt.policies) {
				t.Errorf("decision = %s by %v, want %s by %v (errors %v)", d.Effect, d.Policies, tt.effect, tt.policies, d.Errors)
			}
			// The registry enforces the same decision.
			res := reg.Execute(ctx, tt.tool, json.RawMessage(tt.args))
			if got := res.Kind == ""; got != (tt.effect == policy.Allow) {
				t.Errorf("Execute = %+v, want effect %s", res, tt.effect)
			}
			if tt.effect != policy.Allow && res.Kind != tool.KindDenied {
				t.Errorf("Execute kind = %q, want denied", res.Kind)
			}
			if res.IsError && strings.Contains(res.Error, "editors-") {
				t.Errorf("message names a policy: %q", res.Error)
			}
		})
	}
}

// checkedArgs returns the arguments the authorizer sees for a call, by
// running it under a recording authorizer.
func checkedArgs(t *testing.T, reg *tool.Registry, name, args string) json.RawMessage {
	t.Helper()
	var seen json.RawMessage
	rec := tool.NewRegistry(tool.WithAuthorizer(recorder(func(req tool.AccessRequest) { seen = slices.Clone(req.Args) })))
	tl, _ := reg.Get(name)
	rec.Register(tl)
	rec.Execute(context.Background(), name, json.RawMessage(args))
	if seen == nil {
		t.Fatalf("arguments %s were refused before authorization", args)
	}
	return seen
}

type recorder func(req tool.AccessRequest)

func (r recorder) Authorize(ctx context.Context, req tool.AccessRequest) error {
	r(req)
	return errors.New("recorded")
}

func TestDeniedMessage(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, ran := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), carol)
	res := reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"secrets/k"}`))
	if res.Kind != tool.KindDenied || res.Error != "you may not touch paths under secrets/; use paths under docs/" {
		t.Errorf("result = %+v", res)
	}
	res = reg.Execute(ctx, "write_file", json.RawMessage(`{"path":"docs/a","content":""}`))
	if res.Kind != tool.KindDenied || !strings.Contains(res.Error, `you may not call tool "write_file"`) || strings.Contains(res.Error, "policy") {
		t.Errorf("result = %+v", res)
	}
	if _, ok := ran.Load("write_file"); ok {
		t.Error("a denied tool ran")
	}
}

func TestBypassAttempts(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, ran := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	tests := []struct {
		name, tool, args string
		kind             tool.ErrorKind
	}{
		// Strict parsing refuses these before the policy sees them, so a
		// condition on "path" cannot be dodged by a second spelling.
		{"duplicate key", "write_file", `{"path":"docs/a","path":"secrets/k","content":""}`, tool.KindInvalidArguments},
		{"case-variant key", "write_file", `{"path":"docs/a","PATH":"secrets/k","content":""}`, tool.KindInvalidArguments},
		{"folded key", "write_file", `{"path":"docs/a","paſh":"secrets/k","content":""}`, tool.KindInvalidArguments},
		// Unicode confusables and case variants in the tool name name no tool.
		{"cyrillic i", "wrіte_file", `{"path":"docs/a","content":""}`, tool.KindNotFound},
		{"fullwidth", "ｗrite_file", `{"path":"docs/a","content":""}`, tool.KindNotFound},
		{"case variant name", "Write_File", `{"path":"docs/a","content":""}`, tool.KindNotFound},
		// An escaped spelling decodes to the value the policy tests.
		{"escaped value", "write_file", `{"path":"\u0073ecrets/k","content":""}`, tool.KindDenied},
		// A value shaped like a Cedar entity reference stays a record.
		{"entity-shaped value", "search", `{"query":"q","opts":{"lang":{"__entity":{"type":"X","id":"en"}}}}`, tool.KindInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := reg.Execute(ctx, tt.tool, json.RawMessage(tt.args))
			if res.Kind != tt.kind {
				t.Errorf("kind = %q, want %q: %s", res.Kind, tt.kind, res.Error)
			}
		})
	}
	if _, ok := ran.Load("write_file"); ok {
		t.Error("write_file ran")
	}
}

func TestListingMatchesPermits(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, _ := testRegistry(t, a)
	want := map[string][]string{
		"alice":     {"delete_file", "read_file", "report", "search", "write_file", "admin_reset"},
		"bob":       {"delete_file", "read_file", "search", "write_file"},
		"carol":     {"read_file", "report", "search"},
		"dave":      {},
		"anonymous": {},
	}
	samples := map[string][]string{
		"read_file":   {`{"path":"docs/a"}`, `{"path":"secrets/a"}`},
		"write_file":  {`{"path":"docs/a","content":""}`, `{"path":"x","content":""}`},
		"delete_file": {`{"path":"docs/a"}`},
		"admin_reset": {`{}`},
		"search":      {`{"query":"q","opts":{}}`, `{"query":"q","opts":{"lang":"fr"}}`},
		"report":      {`{}`},
	}
	for _, p := range []*policy.Principal{&alice, &bob, &carol, &dave, nil} {
		ctx, who := context.Background(), "anonymous"
		if p != nil {
			ctx, who = policy.WithPrincipal(ctx, *p), p.ID
		}
		var names []string
		for _, tl := range a.View(ctx, reg).List() {
			names = append(names, tl.Name())
		}
		w := slices.Clone(want[who])
		slices.Sort(w)
		if !slices.Equal(names, w) {
			t.Errorf("%s sees %v, want %v", who, names, w)
		}
		// Property: a tool some sampled call may run (or ask for) is listed;
		// a tool not listed is refused for every sample.
		for name, argsList := range samples {
			tl, _ := reg.Get(name)
			for _, args := range argsList {
				d := a.Decide(ctx, tool.AccessRequest{Tool: tl, Name: name, Options: tool.OptionsOf(tl), Args: checkedArgs(t, reg, name, args)})
				if d.Effect != policy.Deny && !slices.Contains(names, name) {
					t.Errorf("%s: %s %s is %s but not listed", who, name, args, d.Effect)
				}
			}
			if a.CanList(ctx, name, tool.OptionsOf(tl)) != slices.Contains(names, name) {
				t.Errorf("%s: CanList(%s) disagrees with View", who, name)
			}
		}
	}
}

func TestApprovals(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAuthorizer(t, policy.WithClock(func() time.Time { return now }), policy.WithApprovalTTL(time.Minute))
	reg, ran := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	call := func(args string) tool.Result { return reg.Execute(ctx, "delete_file", json.RawMessage(args)) }
	runs := func() int {
		v, ok := ran.Load("delete_file")
		if !ok {
			return 0
		}
		return int(v.(*atomic.Int64).Load())
	}
	request := func(res tool.Result) policy.ApprovalRequest {
		t.Helper()
		req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
		if res.Kind != tool.KindDenied || !ok || res.Metadata["effect"] != "ask" {
			t.Fatalf("result = %+v, want an approval request", res)
		}
		return req
	}

	req := request(call(`{"path":"docs/a"}`))
	if req.Tool != "delete_file" || req.Principal != "bob" || string(req.Args) != `{"path":"docs/a"}` {
		t.Errorf("request = %+v", req)
	}
	if err := a.Grant(req.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Grant(req.ID); !errors.Is(err, policy.ErrUnknownApproval) {
		t.Errorf("second grant: %v", err)
	}
	// A changed argument needs a new approval; the grant stays unused.
	request(call(`{"path":"docs/b"}`))
	// The other principal cannot use bob's approval.
	if res := reg.Execute(policy.WithPrincipal(context.Background(), alice), "delete_file", json.RawMessage(`{"path":"docs/a"}`)); res.Kind != tool.KindDenied {
		t.Errorf("alice used bob's approval: %+v", res)
	}
	// The exact call runs once (whitespace and key order do not matter).
	if res := call(` { "path" : "docs/a" } `); res.IsError {
		t.Fatalf("approved call: %+v", res)
	}
	if runs() != 1 {
		t.Errorf("ran %d times", runs())
	}
	// Replay fails.
	request(call(`{"path":"docs/a"}`))
	if runs() != 1 {
		t.Errorf("replay ran: %d", runs())
	}
	// Expiry: a request granted too late, and a grant used too late.
	late := request(call(`{"path":"docs/c"}`))
	now = now.Add(2 * time.Minute)
	if err := a.Grant(late.ID); !errors.Is(err, policy.ErrExpiredApproval) {
		t.Errorf("late grant: %v", err)
	}
	req = request(call(`{"path":"docs/d"}`))
	if err := a.Grant(req.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	request(call(`{"path":"docs/d"}`))
	if runs() != 1 {
		t.Errorf("expired approval ran: %d", runs())
	}
}

func TestApprover(t *testing.T) {
	var asked []policy.ApprovalRequest
	answer := true
	a := newTestAuthorizer(t, policy.WithApprover(policy.ApproverFunc(func(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
		asked = append(asked, req)
		return answer, nil
	})))
	reg, _ := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	if res := reg.Execute(ctx, "delete_file", json.RawMessage(`{"path":"docs/a"}`)); res.IsError {
		t.Errorf("approved: %+v", res)
	}
	answer = false
	if res := reg.Execute(ctx, "delete_file", json.RawMessage(`{"path":"docs/a"}`)); res.Kind != tool.KindDenied || !strings.Contains(res.Error, "not approved") {
		t.Errorf("declined: %+v", res)
	}
	if len(asked) != 2 || asked[0].Digest != asked[1].Digest {
		t.Errorf("asked = %+v", asked)
	}
	// Allowed and denied calls ask nobody.
	reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"docs/a"}`))
	reg.Execute(ctx, "admin_reset", nil)
	if len(asked) != 2 {
		t.Errorf("asked %d times", len(asked))
	}
}

func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := newTestAuthorizer(t, policy.WithClock(func() time.Time { return now }))
	a.LimitRate("read_file", 1, 2)
	reg, _ := testRegistry(t, a)
	call := func(p policy.Principal) tool.Result {
		return reg.Execute(policy.WithPrincipal(context.Background(), p), "read_file", json.RawMessage(`{"path":"docs/a"}`))
	}
	for i := range 2 {
		if res := call(carol); res.IsError {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	res := call(carol)
	if res.Kind != tool.KindDenied || !strings.Contains(res.Error, "retry after 1s") || res.Metadata["retry_after"] != time.Second {
		t.Errorf("over the limit: %+v", res)
	}
	if res := call(bob); res.IsError {
		t.Errorf("another principal is limited: %+v", res)
	}
	now = now.Add(time.Second)
	if res := call(carol); res.IsError {
		t.Errorf("after the wait: %+v", res)
	}
}

func TestBadPolicies(t *testing.T) {
	for _, src := range []string{
		`permit (principal, action, resource`,
		`@effect("ask") forbid (principal, action, resource);`,
		`@effect("maybe") permit (principal, action, resource);`,
		`@id("x") permit (principal, action, resource); @id("x") permit (principal, action, resource);`,
	} {
		if _, err := policy.New("bad.cedar", []byte(src)); err == nil {
			t.Errorf("accepted %s", src)
		}
	}
}

func TestConcurrentCallsAndReload(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, _ := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), carol)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				res := reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"docs/a"}`))
				// Either policy set allows this call; neither half-loaded state may deny it.
				if res.IsError {
					t.Errorf("goroutine %d call %d: %+v", g, i, res)
					return
				}
			}
		})
	}
	for i := range 50 {
		src := testPolicies
		if i%2 == 1 {
			src = `permit (principal, action, resource == Tool::"read_file");`
		}
		if err := a.Reload("reload.cedar", []byte(src)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func TestPathArguments(t *testing.T) {
	a := newTestAuthorizer(t, policy.WithPathArguments("path"))
	reg, ran := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	tests := []struct {
		path string
		kind tool.ErrorKind
	}{
		{"docs/a", ""},
		{"docs/./a", ""},
		{"docs//a", ""},
		{"docs/../secrets/k", tool.KindDenied}, // the forbid on secrets/* sees the cleaned path
		{"docs/x/../../secrets/k", tool.KindDenied},
		{`docs\..\secrets\k`, tool.KindDenied},
		{"./secrets/k", tool.KindDenied},
		{"docs/../../etc/passwd", tool.KindDenied}, // "../etc/passwd": no permit covers it
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": tt.path, "content": "x"})
			if res := reg.Execute(ctx, "write_file", args); res.Kind != tt.kind {
				t.Errorf("kind = %q, want %q: %s", res.Kind, tt.kind, res.Error)
			}
		})
	}
	if v, _ := ran.Load("write_file"); v.(*atomic.Int64).Load() != 3 {
		t.Errorf("write_file ran %d times, want 3", v.(*atomic.Int64).Load())
	}
	// Without the option, the dodge works: the reason the option exists.
	plain := newTestAuthorizer(t)
	reg2, _ := testRegistry(t, plain)
	if res := reg2.Execute(ctx, "write_file", json.RawMessage(`{"path":"docs/../secrets/k","content":"x"}`)); res.IsError {
		t.Errorf("without WithPathArguments: %+v", res)
	}
}

func TestTimeConditions(t *testing.T) {
	at := func(h int) func() time.Time {
		return func() time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	}
	for _, tt := range []struct {
		src  string
		hour int
		ok   bool
	}{
		{`permit (principal, action, resource) when { context.hour >= 9 && context.hour < 17 };`, 10, true},
		{`permit (principal, action, resource) when { context.hour >= 9 && context.hour < 17 };`, 20, false},
		{`permit (principal, action, resource) when { context.now < datetime("2026-01-01T12:00:00Z") };`, 10, true},
		{`permit (principal, action, resource) when { context.now < datetime("2026-01-01T12:00:00Z") };`, 13, false},
		{`permit (principal, action, resource) when { context["ho\u{75}r"] == 10 };`, 10, true},
	} {
		a, err := policy.New("time.cedar", []byte(tt.src), policy.WithClock(at(tt.hour)))
		if err != nil {
			t.Fatal(err)
		}
		reg, _ := testRegistry(t, a)
		res := reg.Execute(policy.WithPrincipal(context.Background(), carol), "admin_reset", nil)
		if res.IsError == tt.ok {
			t.Errorf("%s at %d:00: %+v", tt.src, tt.hour, res)
		}
	}
}
