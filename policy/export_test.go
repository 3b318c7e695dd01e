package policy

import (
	"context"
	"encoding/base64"
	"strconv"
)

// CedarOnly turns off the residual fast path, so that every call whose
// decision depends on its arguments is evaluated by Cedar: the baseline
// of the fast path in benchmarks.
func CedarOnly() Option { return func(a *Authorizer) { a.cedarOnly = true } }

// PerToolListing makes listings judge and cache a verdict per tool, as
// they did before they were planned per principal: the baseline of
// listings in benchmarks.
func PerToolListing() Option { return func(a *Authorizer) { a.perToolListing = true } }

// FixedSignerNonces makes s draw every nonce as zero bytes, so that its
// signatures are the same in every process (the fuzz target's seeds).
func FixedSignerNonces(s *HeaderSigner) {
	s.randRead = func(b []byte) (int, error) { clear(b); return len(b), nil }
}

// SignV1 returns the headers s.Headers makes, with the signature in the
// key-less v1 form an older signer made.
func SignV1(s *HeaderSigner, ctx context.Context, call SignedCall) map[string][]string {
	h := s.Headers(ctx, call)
	sig, _ := s.parse(h[HeaderPrincipalSignature][0])
	claim := ""
	if c := h[HeaderPrincipal]; len(c) == 1 {
		claim = c[0]
	}
	h[HeaderPrincipalSignature] = []string{"v1 t=" + strconv.FormatInt(sig.t, 10) +
		" n=" + base64.RawURLEncoding.EncodeToString(sig.nonce) +
		" s=" + base64.RawURLEncoding.EncodeToString(macV1(s.key, claim, call, sig.t, sig.nonce))}
	return h
}

// UnboundedBytes turns off s's bound on the bytes of arguments it keeps:
// the control of the attack that fills memory.
func UnboundedBytes(s *MemoryApprovalStore) { s.maxBytes = 0 }

// KeptBytes returns the bytes of arguments s keeps.
func KeptBytes(s *MemoryApprovalStore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}
