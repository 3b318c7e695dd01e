// Package inspector serves a web page for trying the tools of a
// [tool.Registry] by hand: a searchable list of the tools with their
// definitions, a form generated from each tool's input schema that calls
// it and shows the result (progress and log messages stream in while it
// runs), and a batch runner that draws a batch's calls on a timeline.
//
// The page and its script are part of the binary; it needs no network
// access beyond the inspector itself.
//
// A [Handler] is meant for one person on one machine. Every request must
// carry the handler's random token: in the URL of the page, and in the
// X-Clawtool-Token header on every request of the page's script, so that
// another web page cannot make the browser run a tool (no tool runs on
// GET). No cookie holds it: a browser sends a cookie of 127.0.0.1 to
// every server on 127.0.0.1, whatever its port. Requests whose Host is not a loopback name or
// address, or whose Origin is not the Host they were sent to, are refused,
// which stops DNS rebinding. Serve it on 127.0.0.1.
package inspector

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/miniopenclaw/tool"
)

// TokenHeader is the request header that carries the token on API calls.
const TokenHeader = "X-Clawtool-Token"

// oldCookie is the cookie earlier inspectors kept the token in.
const oldCookie = "clawtool_inspector"

// A Handler serves the inspector. Make one with [New].
type Handler struct {
	reg       *tool.Registry
	token     string
	render    func(format string, tools []tool.Tool) ([]byte, error)
	formats   []string
	source    func(name string) string
	execOpts  []tool.ExecutorOption
	hosts     []string
	mux       *http.ServeMux
	maxEvents int
	callAs    func(ctx context.Context, id string, roles []string) (context.Context, error)
	openAudit func() (io.ReadSeekCloser, error)
	sources   func() []Source
	approvals *Approvals
}

// An Option configures a [Handler].
type Option func(*Handler)

// WithDefinitions makes the page show each tool's definition in the
// named formats, rendered by render (for example the formats of
// "clawtool schema"). Without it the page shows the registry's own
// definitions (Chat Completions tools) only.
func WithDefinitions(formats []string, render func(format string, tools []tool.Tool) ([]byte, error)) Option {
	return func(h *Handler) { h.formats, h.render = formats, render }
}

// WithSource names where each tool comes from ("built-in", "MCP
// server …", "NATS …"); source returns "" when it does not know.
func WithSource(source func(name string) string) Option {
	return func(h *Handler) { h.source = source }
}

// WithExecutorOptions adds options to the [tool.Executor] every call and
// batch runs through, for example [tool.WithHooks] for approval or audit.
func WithExecutorOptions(opts ...tool.ExecutorOption) Option {
	return func(h *Handler) { h.execOpts = append(h.execOpts, opts...) }
}

// WithToken sets the token instead of a random one; it must be at least
// 16 characters long, or New ignores it.
func WithToken(token string) Option {
	return func(h *Handler) {
		if len(token) >= 16 {
			h.token = token
		}
	}
}

// WithAllowedHosts adds host names (without port) that the Host header may
// name besides loopback names and addresses, for an inspector reached
// through a name of the user's choosing.
func WithAllowedHosts(hosts ...string) Option {
	return func(h *Handler) { h.hosts = append(h.hosts, hosts...) }
}

// New returns a Handler for the tools of r.
func New(r *tool.Registry, opts ...Option) *Handler {
	h := &Handler{reg: r, source: func(string) string { return "" }, maxEvents: 1000}
	for _, o := range opts {
		o(h)
	}
	if h.token == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails
		h.token = hex.EncodeToString(b[:])
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", h.page)
	h.mux.HandleFunc("GET /api/tools", h.tools)
	h.mux.HandleFunc("GET /api/definitions", h.definitions)
	h.mux.HandleFunc("POST /api/call", h.call)
	h.mux.HandleFunc("POST /api/batch", h.batch)
	h.mux.HandleFunc("POST /api/trace", h.trace)
	h.mux.HandleFunc("GET /api/access", h.access)
	h.mux.HandleFunc("GET /api/audit", h.audit)
	h.mux.HandleFunc("GET /api/sources", h.sourcesOf)
	h.mux.HandleFunc("GET /api/approvals", h.pending)
	h.mux.HandleFunc("GET /api/approvals/{id}", h.one)
	h.mux.HandleFunc("POST /api/approvals/{id}/{verb}", h.answer)
	return h
}

// Token returns the token every request must carry.
func (h *Handler) Token() string { return h.token }

// URL returns the address of the page for a handler served at base (such
// as "http://127.0.0.1:8080/ui/"), with the token: the URL to print.
func (h *Handler) URL(base string) string {
	return base + "?token=" + url.QueryEscape(h.token)
}

// ServeHTTP checks the request's Host, Origin and token, then serves it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.allowedHost(r.Host) {
		http.Error(w, "inspector: refused: the Host header is not a loopback address (DNS rebinding?)", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
		http.Error(w, "inspector: refused: the request comes from another origin", http.StatusForbidden)
		return
	}
	// Browsers say where a request comes from: only the page itself
	// ("same-origin") and the user ("none": a typed or bookmarked URL)
	// may use the inspector; another port of this host is "same-site".
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		http.Error(w, "inspector: refused: "+s+" request", http.StatusForbidden)
		return
	}
	// No cookie carries the token: browsers send a cookie of 127.0.0.1
	// to every port of 127.0.0.1, so any other local server the user
	// visits would be handed it. The page's URL holds the token, and
	// the page sends it in the header.
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Has("token"):
		if !h.tokenOK(r.URL.Query().Get("token")) {
			http.Error(w, "inspector: wrong token: use the URL printed when the inspector started", http.StatusForbidden)
			return
		}
		// Earlier inspectors kept the token in this cookie: have the
		// browser forget it, since it goes to every local port (and a
		// host's fixed token, WithToken, would still be in it).
		http.SetCookie(w, &http.Cookie{Name: oldCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if !h.tokenOK(r.Header.Get(TokenHeader)) {
			http.Error(w, "inspector: missing or wrong token: open the URL printed when the inspector started (it holds the token)", http.StatusForbidden)
			return
		}
	default:
		// Anything that may run a tool needs the header: a cookie alone
		// would let another page's form post make the browser run it.
		if !h.tokenOK(r.Header.Get(TokenHeader)) {
			http.Error(w, "inspector: missing or wrong "+TokenHeader+" header", http.StatusForbidden)
			return
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(h.token)) == 1
}

// allowedHost reports whether hostport names this machine's loopback
// interface (or a host added with WithAllowedHosts).
func (h *Handler) allowedHost(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range h.hosts {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether origin is http(s)://host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}
