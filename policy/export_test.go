package policy

// CedarOnly turns off the residual fast path, so that every call whose
// decision depends on its arguments is evaluated by Cedar: the baseline
// of the fast path in benchmarks.
func CedarOnly() Option { return func(a *Authorizer) { a.cedarOnly = true } }
