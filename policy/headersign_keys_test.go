package policy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

var (
	oldKey   = []byte("the old key, at least 32 bytes..")
	newKey   = []byte("the new key, at least 32 bytes..")
	otherKey = []byte("nobody's key, at least 32 bytes.")
)

// TestHeaderSignerKeyRotation: a verifier accepts a signature made with
// any key of its keyring, found by the key id the signature names, and
// refuses one made with a key it does not hold, however it names it: the
// steps of a rotation (old key; old and new accepted; new key) never
// leave a caller of the current key refused, and a dropped key stops
// working.
func TestHeaderSignerKeyRotation(t *testing.T) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	call := policy.SignedCall{Subject: "clawtool.tool.clawtool.drop", Reply: "_INBOX.a.1", Body: []byte(`{}`)}
	alice := policy.WithPrincipal(context.Background(), policy.Principal{ID: "alice"})
	for _, tc := range []struct {
		name     string
		signWith []byte
		verifier []byte
		accept   [][]byte
		want     string // "" for accepted
	}{
		{"before: old signs, old verifies", oldKey, oldKey, nil, ""},
		{"during: old signs, new verifies accepting old", oldKey, newKey, [][]byte{oldKey}, ""},
		{"during: new signs, new verifies accepting old", newKey, newKey, [][]byte{oldKey}, ""},
		{"during: new signs, old verifies accepting new", newKey, oldKey, [][]byte{newKey}, ""},
		{"after: old signs, new alone verifies", oldKey, newKey, nil, "which this worker does not hold"},
		{"a key nobody accepts", otherKey, newKey, [][]byte{oldKey}, "which this worker does not hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer := newSigner(t, tc.signWith, clock, policy.HeaderSignerOptions{})
			var accept []policy.SignerKey
			for _, k := range tc.accept {
				accept = append(accept, policy.SignerKey{Secret: k})
			}
			verifier := newSigner(t, tc.verifier, clock, policy.HeaderSignerOptions{AcceptKeys: accept})
			h := signer.Headers(alice, call)
			if !strings.HasPrefix(h[policy.HeaderPrincipalSignature][0], "v2 k="+policy.KeyID(tc.signWith)+" ") {
				t.Fatalf("signature %q does not name the signer's key id %s", h[policy.HeaderPrincipalSignature][0], policy.KeyID(tc.signWith))
			}
			ctx, err := verifier.FromHeaders(context.Background(), call, h)
			if tc.want != "" {
				if !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrPrincipalSignature saying %q", err, tc.want)
				}
				return
			}
			if p, _ := policy.PrincipalFrom(ctx); err != nil || p.ID != "alice" {
				t.Fatalf("principal %+v, %v; want alice", p, err)
			}
		})
	}
}

// TestHeaderSignerNamedKeys: a key may be given an id of its own; a
// signature naming a held id is verified with that id's key only, so a
// signature whose key id is switched to another held key's is refused.
func TestHeaderSignerNamedKeys(t *testing.T) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	call := policy.SignedCall{Subject: "s", Body: []byte(`{}`)}
	signer := newSigner(t, newKey, clock, policy.HeaderSignerOptions{KeyID: "2026-12"})
	if signer.KeyID() != "2026-12" {
		t.Fatalf("KeyID() = %s", signer.KeyID())
	}
	verifier := newSigner(t, newKey, clock, policy.HeaderSignerOptions{KeyID: "2026-12", AcceptKeys: []policy.SignerKey{{ID: "2026-06", Secret: oldKey}}})
	h := signer.Headers(context.Background(), call)
	if _, err := verifier.FromHeaders(context.Background(), call, h); err != nil {
		t.Fatalf("control: %v", err)
	}
	h = signer.Headers(context.Background(), call)
	h[policy.HeaderPrincipalSignature] = []string{strings.Replace(h[policy.HeaderPrincipalSignature][0], "k=2026-12 ", "k=2026-06 ", 1)}
	if _, err := verifier.FromHeaders(context.Background(), call, h); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("key id switched to the other held key: %v, want does not match", err)
	}
}

// TestHeaderSignerV1: the key-less v1 form of an older signer is taken
// by a verifier holding exactly one key (the one it must have been made
// with), and refused by one holding several, which could only guess.
func TestHeaderSignerV1(t *testing.T) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	call := policy.SignedCall{Subject: "s", Reply: "r", Body: []byte(`{}`)}
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	for _, tc := range []struct {
		name     string
		signWith []byte
		verifier []byte
		accept   []policy.SignerKey
		want     string
	}{
		{"one key: taken", oldKey, oldKey, nil, ""},
		{"one other key: refused", oldKey, newKey, nil, "does not match"},
		{"several keys: refused", oldKey, oldKey, []policy.SignerKey{{Secret: newKey}}, "holds 2 keys"},
		{"several keys, made with the accepted one: refused", newKey, oldKey, []policy.SignerKey{{Secret: newKey}}, "holds 2 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer := newSigner(t, tc.signWith, clock, policy.HeaderSignerOptions{})
			verifier := newSigner(t, tc.verifier, clock, policy.HeaderSignerOptions{AcceptKeys: tc.accept})
			h := policy.SignV1(signer, bob, call)
			ctx, err := verifier.FromHeaders(context.Background(), call, h)
			if tc.want != "" {
				if !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrPrincipalSignature saying %q", err, tc.want)
				}
				return
			}
			if p, _ := policy.PrincipalFrom(ctx); err != nil || p.ID != "bob" {
				t.Fatalf("principal %+v, %v; want bob", p, err)
			}
			if _, err := verifier.FromHeaders(context.Background(), call, h); err == nil || !strings.Contains(err.Error(), "already used") {
				t.Fatalf("the v1 signature again: %v, want already used", err)
			}
		})
	}
}

func TestNewHeaderSignerKeyring(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
		o    policy.HeaderSignerOptions
		want string
	}{
		{"short signing key", make([]byte, policy.MinSignerKeyBytes-1), policy.HeaderSignerOptions{}, "principal signing key: 31 bytes"},
		{"short accepted key", newKey, policy.HeaderSignerOptions{AcceptKeys: []policy.SignerKey{{Secret: []byte("short")}}}, "accepted key 1: 5 bytes"},
		{"the same key twice", newKey, policy.HeaderSignerOptions{AcceptKeys: []policy.SignerKey{{Secret: newKey}}}, "given twice"},
		{"two keys, one id", newKey, policy.HeaderSignerOptions{KeyID: "k", AcceptKeys: []policy.SignerKey{{ID: "k", Secret: oldKey}}}, "given twice"},
		{"key id with a space", newKey, policy.HeaderSignerOptions{KeyID: "a b"}, "key id"},
		{"key id too long", newKey, policy.HeaderSignerOptions{KeyID: strings.Repeat("k", policy.MaxSignerKeyID+1)}, "key id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := policy.NewHeaderSigner(tc.key, &tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if id := policy.KeyID(newKey); len(id) != 16 || id == policy.KeyID(oldKey) {
		t.Fatalf("KeyID: %q, %q", id, policy.KeyID(oldKey))
	}
}

// sharedNonces is a NonceStore two verifiers share, as a bucket on a
// bus is shared by the workers of a service; err, when set, is returned
// by every Claim (a store out of reach).
type sharedNonces struct {
	mu     sync.Mutex
	seen   map[string]bool
	claims int
	err    error
}

func (s *sharedNonces) Claim(_ context.Context, nonce string, expires, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.err != nil {
		return s.err
	}
	if len(nonce) != 22 || !expires.After(now) {
		return errors.New("bad claim")
	}
	if s.seen[nonce] {
		return policy.ErrNonceUsed
	}
	s.seen[nonce] = true
	return nil
}

// TestHeaderSignerSharedNonces: two verifiers sharing a NonceStore take
// a signed call once between them (control: with their own memories each
// takes it); a store that cannot answer refuses every call (fail
// closed); and a signature that does not verify never reaches the store.
func TestHeaderSignerSharedNonces(t *testing.T) {
	clock := &fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	call := policy.SignedCall{Subject: "s", Body: []byte(`{}`)}
	signer := newSigner(t, signKey, clock, policy.HeaderSignerOptions{})
	h := signer.Headers(context.Background(), call)

	t.Run("control: own memories take it twice", func(t *testing.T) {
		for i := range 2 {
			v := newSigner(t, signKey, clock, policy.HeaderSignerOptions{})
			if _, err := v.FromHeaders(context.Background(), call, h); err != nil {
				t.Fatalf("verifier %d: %v", i, err)
			}
		}
	})
	t.Run("shared store: once", func(t *testing.T) {
		store := &sharedNonces{seen: map[string]bool{}}
		a := newSigner(t, signKey, clock, policy.HeaderSignerOptions{Nonces: store})
		b := newSigner(t, signKey, clock, policy.HeaderSignerOptions{Nonces: store})
		if _, err := a.FromHeaders(context.Background(), call, h); err != nil {
			t.Fatal(err)
		}
		if _, err := b.FromHeaders(context.Background(), call, h); !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("the other verifier: %v, want already used", err)
		}
		forged := map[string][]string{policy.HeaderPrincipalSignature: {strings.Replace(h[policy.HeaderPrincipalSignature][0], "s=", "s=A", 1)[:len(h[policy.HeaderPrincipalSignature][0])]}}
		if _, err := b.FromHeaders(context.Background(), call, forged); err == nil {
			t.Fatal("a forged signature was taken")
		}
		if store.claims != 2 {
			t.Fatalf("the store was asked %d times, want 2 (never for a signature that does not verify)", store.claims)
		}
	})
	t.Run("store out of reach: refused", func(t *testing.T) {
		store := &sharedNonces{err: errors.New("nonce bucket: nats: timeout")}
		v := newSigner(t, signKey, clock, policy.HeaderSignerOptions{Nonces: store})
		if _, err := v.FromHeaders(context.Background(), call, signer.Headers(context.Background(), call)); !errors.Is(err, policy.ErrPrincipalSignature) || !strings.Contains(err.Error(), "nats: timeout") {
			t.Fatalf("err = %v, want refused saying why", err)
		}
	})
}

// A worker in the middle of a key rotation takes calls signed with the
// new key and with the old one, found by the key id each signature names.
func ExampleHeaderSignerOptions_acceptKeys() {
	oldKey := []byte("the old key, at least 32 bytes..")
	newKey := []byte("the new key, at least 32 bytes..")
	worker, _ := policy.NewHeaderSigner(newKey, &policy.HeaderSignerOptions{AcceptKeys: []policy.SignerKey{{Secret: oldKey}}})
	call := policy.SignedCall{Subject: "clawtool.tool.clawtool.calc", Body: []byte(`{"expression":"6*7"}`)}
	for _, key := range [][]byte{oldKey, newKey, []byte("a key the worker does not hold..")} {
		caller, _ := policy.NewHeaderSigner(key, nil)
		_, err := worker.FromHeaders(context.Background(), call, caller.Headers(context.Background(), call))
		fmt.Println(caller.KeyID(), err)
	}
	// Output:
	// M3_vUUbTb51_LNQz <nil>
	// b8FQas9GI-Z7La6g <nil>
	// qxCkDOJxF9iOmPYG principal claim refused: the signature is made with key id qxCkDOJxF9iOmPYG, which this worker does not hold
}
