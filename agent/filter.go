package agent

import "github.com/miniopenclaw/tool"

// WithToolFilter limits the tools the model is told about, and those
// tool search may find, to those keep accepts, for example the tools a
// user may call (package policy's Authorizer.CanList for the user's
// principal). It changes what the model sees, not what may run: calls are
// still decided by the registry's Authorizer, so a model that calls a
// hidden tool anyway is refused there. keep is called when a Session
// starts, once per registered tool.
func WithToolFilter(keep func(t tool.Tool) bool) Option {
	return func(c *config) { c.keep = keep }
}
