package policy

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
