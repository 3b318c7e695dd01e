package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// strictPolicies forbid what each row of TestCallerArgumentsStrict tries
// to slip past them, and ask for deploy.
const strictPolicies = `permit (principal, action, resource);
@id("over-100") forbid (principal, action, resource) when { context.args has amount && context.args.amount > 100 };
@id("no-mallory") forbid (principal, action, resource) when { context.args has to && context.args.to == "mallory" };
@id("ask-deploy") @effect("ask") permit (principal, action, resource == Tool::"deploy");`

// payArgs is how a Go tool reads the arguments of pay: encoding/json,
// which binds a key to a field ignoring case and takes the last of two.
type payArgs struct {
	Amount int64  `json:"amount"`
	To     string `json:"to"`
}

// firstWins reads the top-level members of a JSON object keeping the
// first of duplicate keys, as some parsers do (gjson, jsonparser).
func firstWins(t *testing.T, args string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if _, ok := out[k.(string)]; !ok {
			out[k.(string)] = v
		}
	}
	return out
}

// TestCallerArgumentsStrict: an AccessRequest whose Args the caller built
// (a gateway that asks the Authorizer before it forwards a call, rather
// than a Registry that checked the arguments) must hold one strict JSON
// object. Otherwise the policies would judge one reading of the bytes
// (the last of two keys, a lone surrogate replaced, the first of two
// values) while the tool reads another. Each row's control shows that a
// reader the tool may use gets, from the attack's bytes, the value the
// policies forbid, and that the policies do forbid it when it is sent
// plainly; the attack itself must be denied, by Decide and by Authorize,
// with or without the decision cache, naming what is wrong.
func TestCallerArgumentsStrict(t *testing.T) {
	rows := []struct {
		name, args, plain, why string
		// reads is what the tool reads of args; it must equal what it
		// reads of plain, which the policies forbid.
		reads func(t *testing.T, args string) any
	}{
		{name: "a duplicate key, the forbidden value first", args: `{"amount":150,"amount":1}`, plain: `{"amount":150}`, why: "duplicate key",
			reads: func(t *testing.T, s string) any { return firstWins(t, s)["amount"] }},
		{name: "a duplicate string, the forbidden value first", args: `{"to":"mallory","to":"bob"}`, plain: `{"to":"mallory"}`, why: "duplicate key",
			reads: func(t *testing.T, s string) any { return firstWins(t, s)["to"] }},
		{name: "an escaped duplicate key", args: `{"to":"mallory","\u0074o":"bob"}`, plain: `{"to":"mallory"}`, why: "duplicate key",
			reads: func(t *testing.T, s string) any { return firstWins(t, s)["to"] }},
		{name: "a case-variant key a Go struct binds", args: `{"amount":1,"Amount":150}`, plain: `{"amount":150}`, why: "differ only in case",
			reads: func(t *testing.T, s string) any { var p payArgs; mustUnmarshal(t, s, &p); return p.Amount }},
		{name: "a case-variant key after the plain one", args: `{"to":"bob","tO":"mallory"}`, plain: `{"to":"mallory"}`, why: "differ only in case",
			reads: func(t *testing.T, s string) any { var p payArgs; mustUnmarshal(t, s, &p); return p.To }},
	}
	for _, cache := range []int{0, 1000} {
		a, err := policy.New("p.cedar", []byte(strictPolicies), policy.WithCacheSize(cache))
		if err != nil {
			t.Fatal(err)
		}
		ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				// Control: the tool reads the forbidden value from the
				// attack's bytes, and the policies forbid it plainly.
				if got, want := r.reads(t, r.args), r.reads(t, r.plain); got != want {
					t.Fatalf("control: the tool reads %v from %s, not %v: the row attacks nothing", got, r.args, want)
				}
				if d := a.Decide(ctx, tool.AccessRequest{Name: "pay", Args: json.RawMessage(r.plain)}); d.Effect != policy.Deny {
					t.Fatalf("control: %s is %v, want deny", r.plain, d.Effect)
				}
				d := a.Decide(ctx, tool.AccessRequest{Name: "pay", Args: json.RawMessage(r.args)})
				if d.Effect != policy.Deny || !strings.Contains(d.Reason, r.why) {
					t.Errorf("cache %d: Decide(%s) = %v %q, want deny naming %q", cache, r.args, d.Effect, d.Reason, r.why)
				}
				err := a.Authorize(ctx, tool.AccessRequest{Name: "pay", Args: json.RawMessage(r.args)})
				if !errors.Is(err, tool.ErrDenied) || !strings.Contains(err.Error(), r.why) {
					t.Errorf("cache %d: Authorize(%s) = %v, want a denial naming %q", cache, r.args, err, r.why)
				}
			})
		}
	}
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

// TestCallerArgumentsApprovalCollision: an approval is bound to the
// call's canonical arguments. Bytes that a tool may read differently but
// that canonicalize alike (a lone surrogate and U+FFFD, invalid UTF-8
// and U+FFFD, a value with a second one after it, a duplicate key) must
// not use an approval granted for the plain call; the plain call still
// can, afterwards.
func TestCallerArgumentsApprovalCollision(t *testing.T) {
	for _, tc := range []struct{ name, plain, attack, why string }{
		{"a lone surrogate", `{"v":"a\uFFFD"}`, `{"v":"a\ud800"}`, "surrogate"},
		{"invalid UTF-8", `{"v":"a\uFFFD"}`, "{\"v\":\"a\xff\"}", "UTF-8"},
		{"a second value after the object", `{"v":"1"}`, `{"v":"1"} {"v":"2"}`, "after the object"},
		{"a duplicate key, the other value first", `{"v":"1"}`, `{"v":"2","v":"1"}`, "duplicate key"},
		{"a case-variant key", `{"v":"1"}`, `{"V":"2","v":"1"}`, "differ only in case"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := policy.New("p.cedar", []byte(strictPolicies))
			if err != nil {
				t.Fatal(err)
			}
			ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
			// Control: the two canonicalize alike (encoding/json reads
			// the first value, the last key, U+FFFD for what is not a
			// character), so one digest would fit both.
			var p, q any
			dec := json.NewDecoder(strings.NewReader(tc.attack))
			if err := json.Unmarshal([]byte(tc.plain), &p); err != nil {
				t.Fatal(err)
			}
			if err := dec.Decode(&q); err != nil {
				t.Fatal(err)
			}
			if pj, qj := mustJSON(t, p), mustJSON(t, q); pj != qj && !strings.Contains(tc.why, "case") {
				t.Fatalf("control: %s reads as %s, %s as %s: no collision to attack", tc.plain, pj, tc.attack, qj)
			}
			err = a.Authorize(ctx, tool.AccessRequest{Name: "deploy", Args: json.RawMessage(tc.plain)})
			var de *policy.DeniedError
			if !errors.As(err, &de) || de.Decision.Effect != policy.Ask {
				t.Fatalf("plain call: %v, want ask", err)
			}
			req := de.ResultMetadata()["approval_request"].(policy.ApprovalRequest)
			if err := a.Grant(req.ID); err != nil {
				t.Fatal(err)
			}
			err = a.Authorize(ctx, tool.AccessRequest{Name: "deploy", Args: json.RawMessage(tc.attack)})
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("attack %s used the approval for %s: %v", tc.attack, tc.plain, err)
			}
			if err := a.Authorize(ctx, tool.AccessRequest{Name: "deploy", Args: json.RawMessage(tc.plain)}); err != nil {
				t.Fatalf("the plain call after the refused attack: %v, want its approval still there", err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
