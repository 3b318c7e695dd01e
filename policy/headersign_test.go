package policy_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

var signKey = []byte("0123456789abcdef0123456789abcdef")

// fixedClock is a clock the test moves.
type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

func newSigner(t *testing.T, key []byte, clock *fixedClock, o policy.HeaderSignerOptions) *policy.HeaderSigner {
	t.Helper()
	o.Now = clock.now
	s, err := policy.NewHeaderSigner(key, &o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHeaderSignerRefuses: every way a claim can be wrong is refused with
// an error wrapping ErrPrincipalSignature and naming the reason; the
// untouched claim (control) restores its principal.
func TestHeaderSignerRefuses(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	call := policy.SignedCall{Subject: "clawtool.tool.clawtool.drop", Reply: "_INBOX.a.1", Body: []byte(`{"table":"users"}`)}
	admin := policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}})
	for _, tc := range []struct {
		name string
		// change alters the signed headers, the call, or the clock before
		// verification.
		change func(h map[string][]string, c *policy.SignedCall, clock *fixedClock)
		key    []byte // verifier's key; signKey when nil
		// verifierID is the verifier's key id (KeyID of its key when "").
		verifierID string
		want       string // "" for accepted
		wantWho    string
	}{
		{name: "control: untouched", change: func(map[string][]string, *policy.SignedCall, *fixedClock) {}, wantWho: "root"},
		{name: "tampered principal", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipal] = []string{`{"id":"root","roles":["admin","owner"]}`}
		}, want: "does not match"},
		{name: "principal removed", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			delete(h, policy.HeaderPrincipal)
		}, want: "does not match"},
		{name: "tampered body", change: func(_ map[string][]string, c *policy.SignedCall, _ *fixedClock) {
			c.Body = []byte(`{"table":"orders"}`)
		}, want: "does not match"},
		{name: "moved to another tool", change: func(_ map[string][]string, c *policy.SignedCall, _ *fixedClock) {
			c.Subject = "clawtool.tool.clawtool.echo"
		}, want: "does not match"},
		{name: "result sent elsewhere", change: func(_ map[string][]string, c *policy.SignedCall, _ *fixedClock) {
			c.Reply = "_INBOX.mallory.1"
		}, want: "does not match"},
		{name: "unknown key id", key: []byte("another key, also 32 bytes long!"), change: func(map[string][]string, *policy.SignedCall, *fixedClock) {}, want: "which this worker does not hold"},
		{name: "wrong key under the signer's key id", key: []byte("another key, also 32 bytes long!"), verifierID: policy.KeyID(signKey),
			change: func(map[string][]string, *policy.SignedCall, *fixedClock) {}, want: "does not match"},
		{name: "key id changed", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "k="+policy.KeyID(signKey), "k=other", 1)}
		}, want: "which this worker does not hold"},
		{name: "expired", change: func(_ map[string][]string, _ *policy.SignedCall, clock *fixedClock) {
			clock.t = clock.t.Add(policy.DefaultSignatureMaxAge + time.Millisecond)
		}, want: "old, more than"},
		{name: "just within the age", change: func(_ map[string][]string, _ *policy.SignedCall, clock *fixedClock) {
			clock.t = clock.t.Add(policy.DefaultSignatureMaxAge)
		}, wantWho: "root"},
		{name: "future-dated past the skew", change: func(_ map[string][]string, _ *policy.SignedCall, clock *fixedClock) {
			clock.t = clock.t.Add(-policy.DefaultSignatureSkew - time.Millisecond)
		}, want: "ahead, more than"},
		{name: "future-dated within the skew", change: func(_ map[string][]string, _ *policy.SignedCall, clock *fixedClock) {
			clock.t = clock.t.Add(-policy.DefaultSignatureSkew)
		}, wantWho: "root"},
		{name: "missing signature", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			delete(h, policy.HeaderPrincipalSignature)
		}, want: "is missing"},
		{name: "repeated signature", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			s := h[policy.HeaderPrincipalSignature][0]
			h[policy.HeaderPrincipalSignature] = []string{s, s}
		}, want: "2 times"},
		{name: "repeated principal", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			p := h[policy.HeaderPrincipal][0]
			h[policy.HeaderPrincipal] = []string{p, `{"id":"root","roles":["admin"]}`}
		}, want: "2 times"},
		{name: "oversized signature", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{h[policy.HeaderPrincipalSignature][0] + strings.Repeat(" ", 300)}
		}, want: "more than 256"},
		{name: "oversized principal", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipal] = []string{`{"id":"` + strings.Repeat("a", policy.MaxPrincipalHeader) + `"}`}
		}, want: "more than 8192"},
		{name: "malformed: unknown version", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "v2 ", "v4 ", 1)}
		}, want: "malformed"},
		{name: "v2 relabelled v3", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "v2 ", "v3 ", 1)}
		}, want: "not told to check"},
		{name: "v2 where headers are covered", change: func(_ map[string][]string, c *policy.SignedCall, _ *fixedClock) {
			c.Headers = map[string][]string{"Task-Expires": {"2030-01-01T00:00:00Z"}}
		}, want: "older signer"},
		{name: "malformed: v1 with a key id", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "v2 ", "v1 ", 1)}
		}, want: "malformed"},
		{name: "malformed: no key id", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "k="+policy.KeyID(signKey), "k=", 1)}
		}, want: "malformed"},
		{name: "malformed: key id with a wildcard", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "k="+policy.KeyID(signKey), "k=a*", 1)}
		}, want: "malformed"},
		{name: "malformed: key id too long", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "k="+policy.KeyID(signKey), "k="+strings.Repeat("a", policy.MaxSignerKeyID+1), 1)}
		}, want: "malformed"},
		{name: "malformed: signature cut", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			v := h[policy.HeaderPrincipalSignature][0]
			h[policy.HeaderPrincipalSignature] = []string{v[:len(v)-2]}
		}, want: "malformed"},
		{name: "malformed: signed time", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "t=", "t=+", 1)}
		}, want: "malformed"},
		{name: "malformed: empty", change: func(h map[string][]string, _ *policy.SignedCall, _ *fixedClock) {
			h[policy.HeaderPrincipalSignature] = []string{""}
		}, want: "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fixedClock{start}
			signer := newSigner(t, signKey, clock, policy.HeaderSignerOptions{})
			key := tc.key
			if key == nil {
				key = signKey
			}
			verifier := newSigner(t, key, clock, policy.HeaderSignerOptions{KeyID: tc.verifierID})
			h := signer.Headers(admin, call)
			c := call
			tc.change(h, &c, clock)
			ctx, err := verifier.FromHeaders(context.Background(), c, h)
			if tc.want != "" {
				if !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrPrincipalSignature saying %q", err, tc.want)
				}
				if _, ok := policy.PrincipalFrom(ctx); ok {
					t.Fatal("a refused claim left a principal in the context")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p, _ := policy.PrincipalFrom(ctx); p.ID != tc.wantWho {
				t.Fatalf("principal %+v, want %s", p, tc.wantWho)
			}
		})
	}
}

// TestHeaderSignerRefusesReplay: one verifier takes a signed claim once;
// a second, identical delivery is refused, until the signature expires
// (and is refused as expired). A full nonce memory refuses new calls.
func TestHeaderSignerRefusesReplay(t *testing.T) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := newSigner(t, signKey, clock, policy.HeaderSignerOptions{MaxNonces: 2})
	call := policy.SignedCall{Subject: "s", Body: []byte("{}")}
	h := s.Headers(context.Background(), call)
	if _, err := s.FromHeaders(context.Background(), call, h); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	if _, err := s.FromHeaders(context.Background(), call, maps.Clone(h)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("second delivery: %v, want already used", err)
	}
	if _, err := s.FromHeaders(context.Background(), call, s.Headers(context.Background(), call)); err != nil {
		t.Fatalf("another signature of the same call: %v", err)
	}
	if _, err := s.FromHeaders(context.Background(), call, s.Headers(context.Background(), call)); err == nil || !strings.Contains(err.Error(), "try again later") {
		t.Fatalf("third nonce within the age with room for two: %v", err)
	}
	clock.t = clock.t.Add(policy.DefaultSignatureMaxAge + time.Second)
	if _, err := s.FromHeaders(context.Background(), call, s.Headers(context.Background(), call)); err != nil {
		t.Fatalf("after the first two expired: %v", err)
	}
	if _, err := s.FromHeaders(context.Background(), call, h); err == nil || !strings.Contains(err.Error(), "old") {
		t.Fatalf("the first signature, expired: %v", err)
	}
}

// TestHeaderSignerNoPrincipal: a call that claims no one is signed too,
// and restores no principal; without the key it is refused like any.
func TestHeaderSignerNoPrincipal(t *testing.T) {
	clock := &fixedClock{time.Now()}
	s := newSigner(t, signKey, clock, policy.HeaderSignerOptions{})
	call := policy.SignedCall{Subject: "s"}
	h := s.Headers(context.Background(), call)
	if _, ok := h[policy.HeaderPrincipal]; ok {
		t.Fatalf("headers %v claim a principal", h)
	}
	ctx, err := s.FromHeaders(context.Background(), call, h)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := policy.PrincipalFrom(ctx); ok {
		t.Fatalf("principal %+v, want none", p)
	}
	if _, err := s.FromHeaders(context.Background(), call, map[string][]string{}); !errors.Is(err, policy.ErrPrincipalSignature) {
		t.Fatalf("no headers at all: %v, want refused", err)
	}
}

func TestNewHeaderSignerShortKey(t *testing.T) {
	if _, err := policy.NewHeaderSigner(make([]byte, policy.MinSignerKeyBytes-1), nil); err == nil {
		t.Fatal("a 31-byte key was taken")
	}
}

// TestReadSignerKeyFile: a private file of at least 32 bytes (a trailing
// newline dropped) is the key; a short, oversized, or group/other
// readable file is refused.
func TestReadSignerKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := string(signKey)
	for _, tc := range []struct {
		name, data string
		mode       os.FileMode
		want       string // "" for accepted
	}{
		{"private, with newline", key + "\n", 0o600, ""},
		{"private, no newline", key, 0o400, ""},
		{"short", "0123456789\n", 0o600, "at least 32"},
		{"group readable", key, 0o640, "other users"},
		{"world readable", key, 0o604, "other users"},
		{"oversized", strings.Repeat("k", policy.MaxSignerKeyFileBytes+1), 0o600, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := policy.ReadSignerKeyFile(write(strings.ReplaceAll(tc.name, " ", "_"), tc.data, tc.mode))
			if tc.want == "" {
				if err != nil || string(got) != key {
					t.Fatalf("got %q, %v; want the key", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := policy.ReadSignerKeyFile(dir); err == nil {
		t.Fatal("a directory was read as a key file")
	}
}

func ExampleHeaderSigner() {
	key := []byte("a shared key of at least 32 byte")
	signer, _ := policy.NewHeaderSigner(key, nil)   // the caller's
	verifier, _ := policy.NewHeaderSigner(key, nil) // the worker's
	call := policy.SignedCall{Subject: "clawtool.tool.clawtool.drop", Reply: "_INBOX.x.1", Body: []byte(`{"table":"tmp"}`)}
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}})
	h := signer.Headers(ctx, call)

	got, err := verifier.FromHeaders(context.Background(), call, h)
	p, _ := policy.PrincipalFrom(got)
	fmt.Println(p.ID, p.Roles, err)

	// The same claim on another call is refused.
	other := call
	other.Body = []byte(`{"table":"users"}`)
	_, err = verifier.FromHeaders(context.Background(), other, h)
	fmt.Println(err)
	// Output:
	// root [admin] <nil>
	// principal claim refused: the signature does not match the claim and the call (another key, or the claim, tool, arguments or covered headers changed)
}

// FuzzHeaderSignerFromHeaders: whatever signature and principal headers
// a sender writes, verification ends without panic, and it accepts only
// the exact headers the signer made for that call (in the v2 form, or the
// v1 form of an older signer: the verifier holds one key).
// The seeds run as a test.
func FuzzHeaderSignerFromHeaders(f *testing.F) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	o := &policy.HeaderSignerOptions{Now: clock.now}
	signer, err := policy.NewHeaderSigner(signKey, o)
	if err != nil {
		f.Fatal(err)
	}
	policy.FixedSignerNonces(signer) // the same seeds in every fuzzing process
	call := policy.SignedCall{Subject: "clawtool.tool.clawtool.drop", Reply: "_INBOX.a.1", Body: []byte(`{}`)}
	h := signer.Headers(policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}}), call)
	sig, claim := h[policy.HeaderPrincipalSignature][0], h[policy.HeaderPrincipal][0]
	f.Add(sig, claim)
	f.Add(sig, `{"id":"root","roles":["admin"]}`)
	f.Add(sig, "")
	f.Add(strings.Replace(sig, "v2", "v0", 1), claim)
	sigV1 := policy.SignV1(signer, policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}}), call)[policy.HeaderPrincipalSignature][0]
	f.Add(sigV1, claim)
	f.Add("v1 t=1 n=AAAAAAAAAAAAAAAAAAAAAA s=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", claim)
	f.Add("v2 k=x t=1 n=AAAAAAAAAAAAAAAAAAAAAA s=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", claim)
	f.Add("v1 t=99999999999999999999 n= s=", claim)
	f.Add("v1  t=1 n=x s=y", "{")
	f.Fuzz(func(t *testing.T, sigIn, claimIn string) {
		verifier, err := policy.NewHeaderSigner(signKey, o)
		if err != nil {
			t.Fatal(err)
		}
		in := map[string][]string{policy.HeaderPrincipalSignature: {sigIn}}
		if claimIn != "" {
			in[policy.HeaderPrincipal] = []string{claimIn}
		}
		_, err = verifier.FromHeaders(context.Background(), call, in)
		made := (sigIn == sig || sigIn == sigV1) && claimIn == claim
		if err == nil && !made {
			t.Fatalf("accepted headers the signer did not make: %q %q", sigIn, claimIn)
		}
		if err != nil && !errors.Is(err, policy.ErrPrincipalSignature) && !made {
			t.Fatalf("refused without ErrPrincipalSignature: %v", err)
		}
	})
}

// TestHeaderSignerCoveredHeaders: a signature made over headers
// (SignedCall.Headers, the v3 form) verifies only for the values signed:
// a header changed, added, removed, given twice or renamed is refused, as
// is a verifier that checks other names. The control is the message as
// signed, and one whose headers not covered changed.
func TestHeaderSignerCoveredHeaders(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	signed := map[string][]string{"Task-Expires": {"2030-01-01T00:00:00Z"}, "Task-Caps": nil}
	rows := []struct {
		name   string
		change func(got map[string][]string)
		ok     bool
	}{
		{"as signed (control)", func(map[string][]string) {}, true},
		{"expiry changed", func(g map[string][]string) { g["Task-Expires"] = []string{"2099-01-01T00:00:00Z"} }, false},
		{"expiry given twice", func(g map[string][]string) { g["Task-Expires"] = append(g["Task-Expires"], "2099-01-01T00:00:00Z") }, false},
		{"expiry removed", func(g map[string][]string) { g["Task-Expires"] = nil }, false},
		{"absent header added", func(g map[string][]string) { g["Task-Caps"] = []string{`{"elicitation":{}}`} }, false},
		{"absent header added empty", func(g map[string][]string) { g["Task-Caps"] = []string{""} }, false},
		{"value moved to another name", func(g map[string][]string) {
			g["Task-Caps"], g["Task-Expires"] = g["Task-Expires"], nil
		}, false},
		{"another name checked, absent", func(g map[string][]string) { g["Other"] = nil }, true},
		{"another name checked, present", func(g map[string][]string) { g["Other"] = []string{"x"} }, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			clock := &fixedClock{start}
			signer := newSigner(t, signKey, clock, policy.HeaderSignerOptions{})
			verifier := newSigner(t, signKey, clock, policy.HeaderSignerOptions{Repeats: true})
			call := policy.SignedCall{Subject: "clawtool.task.run.x", Body: []byte("{}"), Headers: signed}
			h := signer.Headers(policy.WithPrincipal(context.Background(), policy.Principal{ID: "alice"}), call)
			if !strings.HasPrefix(h[policy.HeaderPrincipalSignature][0], "v3 ") {
				t.Fatalf("signature %q, want the v3 form", h[policy.HeaderPrincipalSignature][0])
			}
			got := map[string][]string{}
			for k, v := range signed {
				got[k] = slices.Clone(v)
			}
			r.change(got)
			call.Headers = got
			ctx, err := verifier.FromHeaders(context.Background(), call, h)
			if r.ok {
				if p, ok := policy.PrincipalFrom(ctx); err != nil || !ok || p.ID != "alice" {
					t.Fatalf("FromHeaders = %v %v, want alice", p, err)
				}
				return
			}
			if !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), "covered headers") {
				t.Fatalf("err = %v, want the covered headers refused", err)
			}
		})
	}
}
