package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// These tests make a decision, so that the Authorizer caches what it can
// of it, and then change one thing a cached verdict must not outlive.

func noteTool(name string, ann tool.Annotations) tool.Tool {
	return tool.Must(tool.New(name, "Notes.", func(ctx context.Context, a struct {
		Text string `json:"text,omitempty"`
	}) (string, error) {
		return "noted", nil
	}, tool.WithAnnotations(ann), tool.WithInline()))
}

// outcome calls name through reg twice, so that the second call can be
// served from the cache, and returns the effect both calls had.
func outcome(t *testing.T, reg *tool.Registry, ctx context.Context, name, args string) string {
	t.Helper()
	got := make([]string, 2)
	for i := range got {
		res := reg.Execute(ctx, name, json.RawMessage(args))
		switch {
		case !res.IsError:
			got[i] = "allow"
		case res.Kind == tool.KindDenied:
			got[i] = fmt.Sprint(res.Metadata["effect"])
		default:
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if got[0] != got[1] {
		t.Fatalf("%s %s: the same call was %s, then %s", name, args, got[0], got[1])
	}
	return got[0]
}

func TestCacheFollowsReload(t *testing.T) {
	permit := []byte(`permit (principal in Role::"viewer", action, resource);`)
	a, err := policy.New("p.cedar", permit)
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u", Roles: []string{"viewer"}})
	listed := func() bool { return len(a.View(ctx, reg).List()) == 1 }
	if got := outcome(t, reg, ctx, "note", `{"text":"a"}`); got != "allow" || !listed() {
		t.Fatalf("before reload: %s, listed %v", got, listed())
	}
	if err := a.Reload("p.cedar", append(permit, `forbid (principal, action, resource == Tool::"note");`...)); err != nil {
		t.Fatal(err)
	}
	if got := outcome(t, reg, ctx, "note", `{"text":"a"}`); got != "deny" || listed() {
		t.Errorf("after a reload that forbids it: %s, listed %v", got, listed())
	}
	if err := a.Reload("p.cedar", permit); err != nil {
		t.Fatal(err)
	}
	if got := outcome(t, reg, ctx, "note", `{"text":"a"}`); got != "allow" || !listed() {
		t.Errorf("after reloading the permit alone: %s, listed %v", got, listed())
	}
}

func TestCacheFollowsToolAnnotations(t *testing.T) {
	a, err := policy.New("p.cedar", []byte(`permit (principal, action, resource) when { resource.readOnly && !resource.destructive };`))
	if err != nil {
		t.Fatal(err)
	}
	quiet := tool.WithLogger(slog.New(slog.DiscardHandler)) // replacing a tool is logged
	reg := tool.NewRegistry(tool.WithAuthorizer(a), quiet)
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
	for i, tt := range []struct {
		ann  tool.Annotations
		want string
	}{
		{tool.Annotations{ReadOnly: true}, "allow"},
		{tool.Annotations{}, "deny"},
		{tool.Annotations{ReadOnly: true}, "allow"},
		{tool.Annotations{ReadOnly: true, Destructive: true}, "deny"},
	} {
		reg.Register(noteTool("note", tt.ann)) // replaces the tool of that name
		if got := outcome(t, reg, ctx, "note", `{"text":"a"}`); got != tt.want {
			t.Errorf("step %d, %+v: %s, want %s", i, tt.ann, got, tt.want)
		}
		if listed := len(a.View(ctx, reg).List()) == 1; listed != (tt.want == "allow") {
			t.Errorf("step %d, %+v: listed %v", i, tt.ann, listed)
		}
	}
	// Two registries that hold different tools of the same name, one
	// Authorizer.
	other := tool.NewRegistry(tool.WithAuthorizer(a), quiet)
	other.Register(noteTool("note", tool.Annotations{ReadOnly: true}))
	reg.Register(noteTool("note", tool.Annotations{}))
	for range 3 {
		if got := outcome(t, other, ctx, "note", `{}`); got != "allow" {
			t.Errorf("read-only note: %s", got)
		}
		if got := outcome(t, reg, ctx, "note", `{}`); got != "deny" {
			t.Errorf("writing note: %s", got)
		}
	}
}

func TestCacheKeyIsEverythingCedarSees(t *testing.T) {
	a, err := policy.New("p.cedar", []byte(`
permit (principal in Role::"admin", action, resource);
permit (principal, action, resource) when { principal has tenant && principal.tenant == "a" };
permit (principal, action, resource) when { principal has level && principal.level == 5 };
permit (principal, action, resource) when { principal has tags && principal.tags.contains("x") };
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	// All are the user "u": each must get its own decision, in any order.
	cases := []struct {
		p    policy.Principal
		want string
	}{
		{policy.Principal{ID: "u", Roles: []string{"admin"}}, "allow"},
		{policy.Principal{ID: "u"}, "deny"},
		{policy.Principal{ID: "u", Roles: []string{"viewer"}}, "deny"},
		{policy.Principal{ID: "u", Roles: []string{"viewer", "admin"}}, "allow"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"tenant": "a"}}, "allow"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"tenant": "b"}}, "deny"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"level": 5}}, "allow"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"level": "5"}}, "deny"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"level": int32(5)}}, "deny"}, // not a value Cedar holds: absent
		{policy.Principal{ID: "u", Attrs: map[string]any{"tags": []any{"y", "x"}}}, "allow"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"tags": []any{"y"}}}, "deny"},
		{policy.Principal{ID: "u", Attrs: map[string]any{"tenant": map[string]any{"a": true}}}, "deny"},
		{policy.Principal{ID: "v", Attrs: map[string]any{"tenant": "a"}}, "allow"},
	}
	for round := range 2 {
		for i, tt := range cases {
			ctx := policy.WithPrincipal(context.Background(), tt.p)
			if got := outcome(t, reg, ctx, "note", `{}`); got != tt.want {
				t.Errorf("round %d, case %d %+v: %s, want %s", round, i, tt.p, got, tt.want)
			}
		}
	}
}

func TestCacheArgumentConditionsPerCall(t *testing.T) {
	a, err := policy.New("p.cedar", []byte(`
permit (principal, action, resource);
forbid (principal, action, resource) when { context.args.text like "*secret*" };
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
	for i := range 6 {
		args, want := `{"text":"hello"}`, "allow"
		if i%2 == 1 {
			args, want = `{"text":"my secret"}`, "deny"
		}
		if got := outcome(t, reg, ctx, "note", args); got != want {
			t.Errorf("call %d %s: %s, want %s", i, args, got, want)
		}
	}
}

func TestCacheTimeConditionsPerCall(t *testing.T) {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	a, err := policy.New("p.cedar", []byte(`permit (principal, action, resource) when { context.hour < 12 };`),
		policy.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
	for i := range 4 {
		want := "allow"
		if i%2 == 1 {
			now, want = now.Add(6*time.Hour), "deny"
		} else if i > 0 {
			now = now.Add(-6 * time.Hour)
		}
		if got := outcome(t, reg, ctx, "note", `{}`); got != want {
			t.Errorf("at %s: %s, want %s", now.Format(time.Kitchen), got, want)
		}
	}
}

func TestCachedAskNeedsAnApprovalEachCall(t *testing.T) {
	var buf bytes.Buffer
	a, err := policy.New("p.cedar", []byte(`@id("ask-notes") @effect("ask") permit (principal, action, resource);`),
		policy.WithAudit(policy.NewAuditLog(&buf)))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
	call := func() tool.Result { return reg.Execute(ctx, "note", json.RawMessage(`{"text":"a"}`)) }
	for i := range 3 {
		res := call()
		req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
		if !ok || len(req.Policies) != 1 || req.Policies[0] != "ask-notes" {
			t.Fatalf("call %d: %+v, want an approval request", i, res)
		}
		if err := a.Grant(req.ID); err != nil {
			t.Fatal(err)
		}
		if res := call(); res.IsError {
			t.Fatalf("approved call %d: %+v", i, res)
		}
	}
	if res := call(); res.Metadata["effect"] != "ask" {
		t.Errorf("an approval was used twice: %+v", res)
	}
	// Each call has its decision record, naming the deciding policy.
	var decisions int
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var rec policy.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Event == "decision" {
			decisions++
			if len(rec.Policies) != 1 || rec.Policies[0] != "ask-notes" {
				t.Errorf("record %d names %v", rec.Seq, rec.Policies)
			}
		}
	}
	if decisions != 7 {
		t.Errorf("%d decision records for 7 calls", decisions)
	}
}

func TestCachedDecisionRateLimited(t *testing.T) {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	a, err := policy.New("p.cedar", []byte(`permit (principal, action, resource);`), policy.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	a.LimitRate("note", 1, 3)
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(noteTool("note", tool.Annotations{}))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "u"})
	for i := range 3 {
		if res := reg.Execute(ctx, "note", json.RawMessage(`{}`)); res.IsError {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	if res := reg.Execute(ctx, "note", json.RawMessage(`{}`)); res.Metadata["retry_after"] != time.Second {
		t.Errorf("fourth call: %+v", res)
	}
}

// A Decision's slices belong to its caller: changing them does not
// change the next decision.
func TestDecisionIsTheCallers(t *testing.T) {
	a, err := policy.New("p.cedar", []byte(`@id("all") permit (principal, action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	tl := noteTool("note", tool.Annotations{})
	req := tool.AccessRequest{Tool: tl, Name: "note", Options: tool.OptionsOf(tl), Args: json.RawMessage(`{}`)}
	d := a.Decide(context.Background(), req)
	d.Policies[0] = "changed"
	if d := a.Decide(context.Background(), req); d.Policies[0] != "all" {
		t.Errorf("policies = %v", d.Policies)
	}
}
