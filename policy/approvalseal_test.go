package policy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalSealRefusesForgedAnswers: whoever may write an approvals
// store approved any request waiting in it, as anyone they liked: the
// Authorizer used every approved answer the store held. For a store
// others may write (a NATS bucket, which any account with access to its
// subjects writes), WithApprovalKey seals each answer the Authorizer
// gives and uses only answers whose seal verifies. The attack rows
// write the answer as such a writer would (through the store, or into
// its file); the first control shows the same forged answer running the
// call without the key, the others that the Authorizer's own answers,
// and those of a process holding a key being rotated in, still run.
func TestApprovalSealRefusesForgedAnswers(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	other := []byte(strings.Repeat("o", 32))
	const del = `{"op":"delete","key":"notes/a"}`
	admin := &policy.ApprovalAnswerer{ID: "ann", Roles: []string{"admin"}}
	forge := func(t *testing.T, s policy.ApprovalStore, id string) {
		if _, err := s.Answer(context.Background(), id, policy.ApprovalAnswer{Approved: true, By: "ann", Answerer: admin}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	answerAs := func(t *testing.T, dir string, id string, opts ...policy.Option) {
		p := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, opts...)
		if _, err := p.a.Answer(policy.WithPrincipal(context.Background(), ann), id, true, "fine"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		opts    []policy.Option // the worker's
		answer  func(t *testing.T, dir, id string)
		refused string // "": runs
	}{
		{"control: a forged answer without the key", nil, func(t *testing.T, dir, id string) { forge(t, &policy.FileApprovalStore{Dir: dir}, id) }, ""},
		{"control: an answer sealed with the key", []policy.Option{policy.WithApprovalKey(key)},
			func(t *testing.T, dir, id string) { answerAs(t, dir, id, policy.WithApprovalKey(key)) }, ""},
		{"control: an answer sealed with a key rotated in", []policy.Option{policy.WithApprovalKey(key, other)},
			func(t *testing.T, dir, id string) { answerAs(t, dir, id, policy.WithApprovalKey(other, key)) }, ""},
		{"control: the host's grant", []policy.Option{policy.WithApprovalKey(key)}, func(t *testing.T, dir, id string) {
			p := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, policy.WithApprovalKey(key))
			if err := p.a.Grant(id); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"attack: a forged answer", []policy.Option{policy.WithApprovalKey(key)}, func(t *testing.T, dir, id string) { forge(t, &policy.FileApprovalStore{Dir: dir}, id) }, "carries no seal"},
		{"attack: an answer sealed with another key", []policy.Option{policy.WithApprovalKey(key)},
			func(t *testing.T, dir, id string) { answerAs(t, dir, id, policy.WithApprovalKey(other, key)) }, "does not hold"},
		{"attack: an answer made to last longer", []policy.Option{policy.WithApprovalKey(key)}, func(t *testing.T, dir, id string) {
			answerAs(t, dir, id, policy.WithApprovalKey(key))
			tamper(t, dir, func(r map[string]any) { r["ttl"] = float64(24 * time.Hour) })
		}, "does not match"},
		{"attack: an answer given another answerer", []policy.Option{policy.WithApprovalKey(key)}, func(t *testing.T, dir, id string) {
			answerAs(t, dir, id, policy.WithApprovalKey(key))
			tamper(t, dir, func(r map[string]any) {
				r["answered_by"], r["answerer"] = "root", map[string]any{"id": "root", "roles": []any{"admin"}}
			})
		}, "does not match"},
		{"attack: a seal cut short", []policy.Option{policy.WithApprovalKey(key)}, func(t *testing.T, dir, id string) {
			answerAs(t, dir, id, policy.WithApprovalKey(key))
			tamper(t, dir, func(r map[string]any) { r["seal"] = r["seal"].(string)[:20] })
		}, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			worker := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, tc.opts...)
			req := wantRequest(t, worker.call(otto, del))
			tc.answer(t, dir, req.ID)
			res := worker.call(otto, del)
			if tc.refused == "" {
				if res.IsError || worker.ran.Load() != 1 {
					t.Fatalf("the call: %+v, ran %d times; want it run once", res, worker.ran.Load())
				}
				return
			}
			if !res.IsError || worker.ran.Load() != 0 || !strings.Contains(res.Error, tc.refused) {
				t.Fatalf("the call: %+v, ran %d times; want it refused saying %q", res, worker.ran.Load(), tc.refused)
			}
		})
	}
}

// tamper rewrites the one record of the file store in dir with f, as
// someone who may write the file would.
func tamper(t *testing.T, dir string, f func(map[string]any)) {
	t.Helper()
	file := (&policy.FileApprovalStore{Dir: dir}).File()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	recs := doc["records"].([]any)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	f(recs[0].(map[string]any))
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestApprovalRequestSealShowsWhatWasAsked: whoever may write an
// approvals store could change what a waiting request shows (its
// arguments, preview, principal, reason) while its digest still bound
// the call asked: a person approving "delete notes/old" let "delete
// notes/a" run. Under WithApprovalKey the request is sealed when asked,
// and Answer refuses one whose seal does not verify, saying why. The
// control: without the key the person answers the rewritten request, and
// the call it hid ran; it is now refused when used, since what the
// request shows is not the call's (TestApprovalShownArgumentsAreTheCalls,
// whose control is its record as the worker wrote it).
func TestApprovalRequestSealShowsWhatWasAsked(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	const del = `{"op":"delete","key":"notes/a"}`
	shown := func(r map[string]any) {
		harmless := `{"key":"notes/old","op":"delete"}`
		r["preview"], r["args"] = harmless, base64.StdEncoding.EncodeToString([]byte(harmless))
	}
	for _, tc := range []struct {
		name    string
		opts    []policy.Option
		tamper  func(map[string]any)
		refused string // "": answered and the call runs
		// useRefused, when set: answered, and the call refused when it
		// uses the answer, saying so.
		useRefused string
	}{
		{"without the key: answered, refused when used", nil, shown, "", "not the call's"},
		{"control: the request as asked", []policy.Option{policy.WithApprovalKey(key)}, func(map[string]any) {}, "", ""},
		{"attack: other arguments shown", []policy.Option{policy.WithApprovalKey(key)}, shown, "does not match", ""},
		{"attack: another reason shown", []policy.Option{policy.WithApprovalKey(key)}, func(r map[string]any) { r["reason"] = "a routine cleanup" }, "does not match", ""},
		{"attack: the seal removed", []policy.Option{policy.WithApprovalKey(key)}, func(r map[string]any) { delete(r, "request_seal") }, "carries no seal", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, tc.opts...)
			req := wantRequest(t, p.call(otto, del))
			tamper(t, dir, tc.tamper)
			_, err := p.a.Answer(policy.WithPrincipal(context.Background(), ann), req.ID, true, "old notes")
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Answer: %v, want refused saying %q", err, tc.refused)
				}
				if res := p.call(otto, del); !res.IsError || p.ran.Load() != 0 {
					t.Fatalf("the call ran: %+v", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("Answer: %v", err)
			}
			if tc.useRefused != "" {
				if res := p.call(otto, del); !res.IsError || p.ran.Load() != 0 || !strings.Contains(res.Error, tc.useRefused) {
					t.Fatalf("the call: %+v, ran %d; want it refused saying %q", res, p.ran.Load(), tc.useRefused)
				}
				return
			}
			if res := p.call(otto, del); res.IsError || p.ran.Load() != 1 {
				t.Fatalf("the call: %+v, ran %d; want it run once", res, p.ran.Load())
			}
		})
	}
}
