package policy

// CedarOnly turns off the residual fast path, so that every call whose
// decision depends on its arguments is evaluated by Cedar: the baseline
// of the fast path in benchmarks.
func CedarOnly() Option { return func(a *Authorizer) { a.cedarOnly = true } }

// PerToolListing makes listings judge and cache a verdict per tool, as
// they did before they were planned per principal: the baseline of
// listings in benchmarks.
func PerToolListing() Option { return func(a *Authorizer) { a.perToolListing = true } }
