package inspector

import "net/http"

// A Source is one place the registry's tools come from, as the page's
// Sources tab shows it: an MCP server or a module of a configuration
// file, say. A source whose import was cut at its tool cap says so:
// LeftOut tools (at least that many when AtLeast) past MaxTools were not
// imported, and Error says what raises the cap.
type Source struct {
	Name     string `json:"name"`
	Kind     string `json:"kind,omitempty"`  // "mcp", "wasm", …
	State    string `json:"state,omitempty"` // "ready", "failed", …
	Tools    int    `json:"tools"`           // tools it has in the registry
	MaxTools int    `json:"max_tools,omitempty"`
	LeftOut  int    `json:"left_out,omitempty"`
	AtLeast  bool   `json:"at_least,omitempty"`
	Error    string `json:"error,omitempty"` // why it failed, or what it left out
	// Confinement is where a stdio server runs ("native", "unconfined"),
	// Network the network its sandbox policy gives it ("none", "allow",
	// "host") and Allow the rules of an allow list.
	Confinement string   `json:"confinement,omitempty"`
	Network     string   `json:"network,omitempty"`
	Allow       []string `json:"allow,omitempty"`
	// Secrets are the names of the secret-looking variables a confined
	// server is given knowingly (its entry's "secrets"); never their
	// values. The page shows them beside the network policy.
	Secrets []string `json:"secrets,omitempty"`
	// NetworkDenials are the latest connections the sandbox's proxy
	// refused the source, each as "HOST port N: REASON"; NetworkDenied
	// counts them all. The page flags a source with denials.
	NetworkDenials []string `json:"network_denials,omitempty"`
	NetworkDenied  int      `json:"network_denied,omitempty"`
}

// WithSources lets the page show where the tools come from: GET
// /api/sources answers what list returns, and the page shows it in a
// Sources tab, failed sources, cut imports and sources refused the
// network first. list is called on
// every request, so the page shows the state of the moment.
func WithSources(list func() []Source) Option {
	return func(h *Handler) { h.sources = list }
}

// sourcesOf answers GET /api/sources: the sources, or an empty list
// without WithSources.
func (h *Handler) sourcesOf(w http.ResponseWriter, r *http.Request) {
	out := []Source{}
	if h.sources != nil {
		out = append(out, h.sources()...)
	}
	writeJSON(w, http.StatusOK, out)
}
