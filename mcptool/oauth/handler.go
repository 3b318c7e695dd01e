package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/internal/loopback"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// ErrLoginRequired is wrapped by the errors of a [Handler] that cannot
// go on without the user: the server needs an authorization and the
// Handler has no [Authorizer], or the authorization server refused to
// refresh the token. Log in (with an Authorizer, or clawtool auth login)
// and try again.
var ErrLoginRequired = errors.New("oauth: login required")

// Bounds of a Handler's authorizations.
const (
	// maxFlows bounds the authorizations one Handler runs.
	maxFlows = 5
	// maxSameScopes bounds the authorizations for one set of scopes.
	maxSameScopes = 2
	// refreshMargin is how long before its expiry a token is refreshed
	// (at most a quarter of its lifetime).
	refreshMargin = 30 * time.Second
)

// Config configures a [Handler] for one MCP server.
type Config struct {
	// Server is the MCP server's Streamable HTTP endpoint. Tokens are
	// only ever sent to it over https, or plain http to a loopback host.
	Server string
	// Principal names whose tokens these are (see [Key]); empty is the
	// default account.
	Principal string
	// ClientID and ClientSecret are a client registered in advance with
	// the server's authorization server, named by Issuer, which they
	// need (MCP 2026-07-28: authorization server binding); ClientSecret
	// is empty for a public client. When ClientID is set it is used
	// first, as the MCP specification orders; else a client ID metadata
	// document, then dynamic client registration.
	ClientID     string
	ClientSecret string
	// Issuer, if set, is the only authorization server the Handler
	// accepts for the server (the issuer a pre-registered client belongs
	// to): protected resource metadata naming another is refused.
	Issuer string
	// ClientMetadataURL is the https URL (with a path) of the client's
	// ID metadata document, used as its client ID with authorization
	// servers that say they support such documents.
	ClientMetadataURL string
	// ClientName is the client_name of a dynamic registration; empty
	// means "clawtool".
	ClientName string
	// Scopes are requested in every authorization, with the scopes the
	// server's challenge names (or, without those, instead of the
	// protected resource metadata's scopes_supported).
	Scopes []string
	// Audiences are accepted as the audience of a JWT access token
	// besides the resource itself, for authorization servers that name
	// an API identifier instead. A JWT access token for any other
	// audience is refused (a token for another resource must not be
	// sent to this one); opaque tokens cannot be checked.
	Audiences []string
	// Store keeps the registration and tokens; nil keeps them in the
	// Handler only.
	Store Store
	// Authorizer takes the user through an authorization. Nil makes the
	// Handler non-interactive: it uses and refreshes stored tokens, and
	// where those do not do, its errors wrap [ErrLoginRequired].
	Authorizer Authorizer
	// HTTPClient sends the requests to metadata, registration, token and
	// revocation endpoints; nil means http.DefaultClient. Either way
	// each request has a time limit, follows at most three redirects
	// (never from https down to plain http to another host), and reads
	// at most [MaxResponseBytes] of a response.
	HTTPClient *http.Client
	// LoginHint says how to log in, for the errors that wrap
	// [ErrLoginRequired] ("log in with: clawtool auth login NAME").
	LoginHint string
	// Logger receives what the Handler does (never a token or secret);
	// nil discards it.
	Logger *slog.Logger
}

// An Authorizer takes the user through one authorization request (the
// user agent's part of the authorization code flow): [Loopback] opens the
// request in the user's browser and receives the redirect on 127.0.0.1.
// Hosts that run the browser part themselves implement it.
type Authorizer interface {
	// RedirectURI returns the redirect URI that authorization responses
	// come back to (registered with the authorization server). It is an
	// https URL or a plain http URL on a loopback host.
	RedirectURI(ctx context.Context) (string, error)
	// Authorize sends the user to authURL and returns the query
	// parameters of the redirect that came back to RedirectURI, or an
	// error when ctx ends first. The Handler checks them: state, iss,
	// error and code.
	Authorize(ctx context.Context, authURL string) (url.Values, error)
}

// A Handler is the OAuth 2.1 client of MCP authorization for one server:
// it implements the go-sdk's [auth.OAuthHandler], so it goes into
// [github.com/modelcontextprotocol/go-sdk/mcp.StreamableClientTransport]'s OAuthHandler field (see
// [github.com/miniopenclaw/tool/mcptool.URL]), and it is a
// [oauth2.TokenSource] factory for hosts that send requests themselves.
//
// When the server answers 401 (or 403 with insufficient_scope), the
// Handler reads the Bearer challenge, discovers the protected resource's
// metadata (RFC 9728: the challenge's resource_metadata, then the
// well-known URLs) and its authorization server's metadata (RFC 8414,
// then OpenID Connect Discovery), registers (a pre-registered client,
// a client ID metadata document, or dynamic registration, RFC 7591),
// runs the authorization code flow with PKCE (S256) and the resource
// parameter (RFC 8707) through its [Authorizer], exchanges the code and
// keeps the tokens in its [Store]; the request is then sent again.
// Tokens are refreshed before they expire, once for all concurrent
// callers.
//
// Everything a remote party says is checked, and refused with an error
// that says what was wrong: metadata for another resource, an issuer
// that is not the one asked for, endpoints that are not https (plain
// http only on loopback), authorization servers without PKCE, a
// registration for other redirect URIs, an authorization response with
// another state or issuer (RFC 9207), a token that is not a Bearer token
// or is a JWT for another audience, bodies over [MaxResponseBytes], more
// than three redirects. A server that keeps refusing the token it asked
// for gets at most two authorizations for the same scopes and five in
// all. Tokens and secrets never appear in the Handler's errors or logs.
type Handler struct {
	cfg    Config
	server *url.URL
	key    Key
	http   *http.Client
	log    *slog.Logger
	store  Store

	flowMu   sync.Mutex // one authorization at a time
	flows    int
	attempts map[string]int // authorizations by requested scope set

	mu         sync.Mutex
	loaded     bool
	rec        *Record // nil: nothing known yet
	refreshing *refreshCall
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns a Handler for cfg. It refuses a server URL that is not
// https (or plain http on a loopback host), a client metadata URL that
// is not https with a path, scopes that are not scope tokens, and a
// client ID without an Issuer.
func New(cfg Config) (*Handler, error) {
	u, err := checkURL("the server URL", cfg.Server, false)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w; bearer tokens are sent only over https, or plain http to this machine", err)
	}
	if cfg.ClientMetadataURL != "" {
		m, err := checkURL("the client metadata URL", cfg.ClientMetadataURL, false)
		if err != nil || m.Scheme != "https" || strings.TrimPrefix(m.Path, "/") == "" {
			return nil, fmt.Errorf("oauth: the client metadata URL %q must be an https URL with a path", cfg.ClientMetadataURL)
		}
	}
	if cfg.Issuer != "" {
		if _, err := checkURL("the issuer", cfg.Issuer, true); err != nil {
			return nil, fmt.Errorf("oauth: %w", err)
		}
	}
	if err := checkScopes(cfg.Scopes); err != nil {
		return nil, fmt.Errorf("oauth: scopes: %w", err)
	}
	if cfg.ClientSecret != "" && cfg.ClientID == "" {
		return nil, errors.New("oauth: a client secret needs its client ID")
	}
	if cfg.ClientID != "" && cfg.Issuer == "" {
		// Unbound, the client (its secret at the token endpoint, its
		// code and verifier in a mix-up) went to whichever authorization
		// server the server named at the first login.
		return nil, errors.New(`oauth: a client registered in advance belongs to one authorization server: set its Issuer ("issuer" in a configuration entry's "oauth")`)
	}
	h := &Handler{
		cfg:      cfg,
		server:   u,
		key:      Key{Server: cfg.Server, Principal: cfg.Principal},
		http:     newHTTPClient(cfg.HTTPClient),
		log:      cfg.Logger,
		store:    cfg.Store,
		attempts: map[string]int{},
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.store == nil {
		h.store = memoryStore{}
	}
	return h, nil
}

// Key returns the key of the Handler's records in its Store.
func (h *Handler) Key() Key { return h.key }

// TokenSource implements [auth.OAuthHandler]: the token source's Token
// returns the current access token, refreshed first when it expires
// within 30 seconds (or a quarter of its lifetime), or nil and no error
// when there is none yet, so that the request goes without one and the
// server's challenge starts an authorization. A refresh that fails gives
// an error that says so (wrapping [ErrLoginRequired] when the refresh
// token is no longer good), except for a Handler with an Authorizer,
// which lets the server's challenge start a new authorization instead.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h, ctx}, nil
}

type tokenSource struct {
	h   *Handler
	ctx context.Context
}

func (ts tokenSource) Token() (*oauth2.Token, error) { return ts.h.token(ts.ctx) }

func (h *Handler) token(ctx context.Context) (*oauth2.Token, error) {
	rec, err := h.current(ctx)
	if err != nil || rec == nil || rec.AccessToken == "" {
		return nil, err
	}
	now := time.Now()
	if !stale(rec, now) {
		return bearerToken(rec), nil
	}
	if rec.RefreshToken == "" {
		if expired(rec, now) {
			return nil, nil
		}
		return bearerToken(rec), nil
	}
	fresh, err := h.refresh(ctx, rec)
	switch {
	case err == nil:
		return bearerToken(fresh), nil
	case !expired(rec, now) && !errors.Is(err, ErrLoginRequired):
		return bearerToken(rec), nil // still good for a moment; the next call tries again
	case errors.Is(err, ErrLoginRequired) && h.cfg.Authorizer != nil:
		return nil, nil
	}
	return nil, err
}

func bearerToken(rec *Record) *oauth2.Token {
	return &oauth2.Token{AccessToken: string(rec.AccessToken), TokenType: "Bearer", Expiry: rec.Expiry}
}

// stale reports whether rec's access token should be refreshed at now.
func stale(rec *Record, now time.Time) bool {
	if rec.Expiry.IsZero() {
		return false
	}
	margin := refreshMargin
	if life := rec.Expiry.Sub(rec.Obtained); !rec.Obtained.IsZero() && life > 0 && life/4 < margin {
		margin = life / 4
	}
	return !now.Before(rec.Expiry.Add(-margin))
}

func expired(rec *Record, now time.Time) bool {
	return !rec.Expiry.IsZero() && !now.Before(rec.Expiry)
}

// current returns the Handler's record, loading it from the store the
// first time.
func (h *Handler) current(ctx context.Context) (*Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded {
		rec, err := h.store.Load(ctx, h.key)
		if err != nil {
			return nil, err
		}
		if rec != nil && rec.Resource != "" && !h.forServer(rec.Resource) {
			return nil, fmt.Errorf("oauth: the stored tokens of %s are for resource %s; log out to forget them", h.cfg.Server, rec.Resource)
		}
		h.rec, h.loaded = rec, true
	}
	if h.rec == nil {
		return nil, nil
	}
	r := *h.rec
	return &r, nil
}

// forServer reports whether tokens for resource may be sent to the server.
func (h *Handler) forServer(resource string) bool {
	u, err := url.Parse(resource)
	return err == nil && covers(u, h.server)
}

// set makes rec the Handler's record and saves it.
func (h *Handler) set(ctx context.Context, rec *Record) error {
	h.mu.Lock()
	r := *rec
	h.rec, h.loaded = &r, true
	h.mu.Unlock()
	if err := h.store.Save(ctx, h.key, rec); err != nil {
		return fmt.Errorf("oauth: saving the tokens of %s: %w", h.cfg.Server, err)
	}
	return nil
}

// Record returns a copy of what the Handler knows (loaded from its store
// when it has not looked yet), or nil. Its secrets print as the redaction marker.
func (h *Handler) Record(ctx context.Context) (*Record, error) { return h.current(ctx) }

// ForgetToken drops the access and refresh tokens the Handler holds, but
// not the stored ones nor the client registration: the next request goes
// without a token, so the server's challenge starts a new authorization,
// whose tokens then replace the stored ones. A login does this.
func (h *Handler) ForgetToken(ctx context.Context) error {
	rec, err := h.current(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec != nil {
		rec.AccessToken, rec.RefreshToken, rec.Expiry, rec.Obtained = "", "", time.Time{}, time.Time{}
		h.rec = rec
	}
	return nil
}

// A LogoutResult says what [Handler.Logout] did.
type LogoutResult struct {
	// Removed reports whether there was a record to remove.
	Removed bool
	// Revoked reports whether the authorization server revoked the
	// tokens (RFC 7009); RevokeErr says why not, when it has a
	// revocation endpoint and failed.
	Revoked   bool
	RevokeErr error
}

// Logout forgets the Handler's tokens and client registration, here and
// in its store, after asking the authorization server to revoke them
// when it has a revocation endpoint (a failure there is reported in the
// result, not as an error: the tokens are forgotten either way).
func (h *Handler) Logout(ctx context.Context) (LogoutResult, error) {
	var res LogoutResult
	rec, err := h.store.Load(ctx, h.key)
	if err != nil {
		// A record that cannot be read (bad mode, garbage) is still removed.
		h.log.Warn("oauth: the stored record cannot be read; removing it", "server", h.cfg.Server, "error", err)
		rec = nil
	}
	if mem, _ := h.current(ctx); rec == nil {
		rec = mem
	}
	if rec != nil && rec.RevocationEndpoint != "" && (rec.RefreshToken != "" || rec.AccessToken != "") {
		res.RevokeErr = h.revoke(ctx, rec)
		res.Revoked = res.RevokeErr == nil
	}
	h.mu.Lock()
	h.rec, h.loaded = nil, true
	h.mu.Unlock()
	res.Removed, err = h.store.Delete(ctx, h.key)
	res.Removed = res.Removed || rec != nil
	return res, err
}

// Authorize implements [auth.OAuthHandler]: resp is the server's 401 or
// 403 answer to req. It closes resp's body. A nil error means the
// request may be sent again with [Handler.TokenSource]'s token.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp.Body != nil {
		_, _ = io.CopyN(io.Discard, resp.Body, MaxResponseBytes)
		resp.Body.Close()
	}
	challenges, err := ParseChallenges(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return err
	}
	b := bearer(challenges)
	status := resp.StatusCode
	insufficient := b != nil && b.Params["error"] == "insufficient_scope"
	switch {
	case status == http.StatusForbidden && !insufficient:
		return fmt.Errorf("oauth: %s refused the request (403 Forbidden)%s", h.cfg.Server, describe(b))
	case status != http.StatusUnauthorized && status != http.StatusForbidden:
		return fmt.Errorf("oauth: %s answered %s, not an authorization challenge", h.cfg.Server, resp.Status)
	case b == nil && len(challenges) > 0:
		return fmt.Errorf("oauth: %s asks for %s authentication, not an OAuth bearer token", h.cfg.Server, challenges[0].Scheme)
	case b == nil:
		b = &Challenge{Scheme: "bearer"} // no challenge: discover from the well-known URLs
	}
	want := strings.Fields(b.Params["scope"])
	if err := checkScopes(want); err != nil {
		return fmt.Errorf("oauth: the challenge of %s: scope: %w", h.cfg.Server, err)
	}
	h.flowMu.Lock()
	defer h.flowMu.Unlock()

	sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	cur, err := h.current(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if cur != nil && cur.AccessToken != "" && string(cur.AccessToken) != sent && !expired(cur, now) &&
		(!insufficient || contains(cur.Scopes, want)) {
		return nil // another request authorized meanwhile: try with its token
	}
	if insufficient && sent != "" && cur != nil && string(cur.AccessToken) == sent && len(want) > 0 && contains(cur.Scopes, want) {
		return fmt.Errorf("oauth: %s refuses the token for want of the scopes %q it was granted; giving up%s", h.cfg.Server, strings.Join(want, " "), describe(b))
	}
	canRefresh := status == http.StatusUnauthorized && cur != nil && cur.RefreshToken != "" && string(cur.AccessToken) == sent
	if h.cfg.Authorizer == nil && !canRefresh {
		return h.loginRequired(want)
	}
	d, err := h.discover(ctx, b.Params["resource_metadata"])
	if err != nil {
		return err
	}
	if cur != nil && cur.Issuer != "" && cur.Issuer != d.meta.Issuer {
		if cur.Registration == registeredInAdvance && h.cfg.Issuer == "" {
			return fmt.Errorf("oauth: %s now names authorization server %s, but its configured client was used with %s; check the client ID, or set the issuer", h.cfg.Server, d.meta.Issuer, cur.Issuer)
		}
		h.log.Info("oauth: the server names another authorization server; registering again", "server", h.cfg.Server, "old", cur.Issuer, "new", d.meta.Issuer)
		cur = nil // never reuse one server's client or tokens with another
	}
	if canRefresh && cur != nil {
		// The server refused a token that may be refreshed: once, without the user.
		if _, err := h.refresh(ctx, cur); err == nil {
			return nil
		} else if !errors.Is(err, ErrLoginRequired) {
			return err
		}
		cur, _ = h.current(ctx)
	}
	if h.cfg.Authorizer == nil {
		return h.loginRequired(want)
	}
	return h.authorize(ctx, d, cur, want)
}

// loginRequired is the error of a Handler that would have to ask the
// user for an authorization (for the scopes want) and cannot.
func (h *Handler) loginRequired(want []string) error {
	what := "an authorization"
	if len(want) > 0 {
		what = fmt.Sprintf("an authorization for the scopes %q", strings.Join(want, " "))
	}
	return fmt.Errorf("%w: %s needs %s, and this client cannot ask the user; %s", ErrLoginRequired, h.cfg.Server, what, h.loginHint("log in first"))
}

// loginHint returns what to tell the user: def, or the configured hint.
func (h *Handler) loginHint(def string) string {
	if h.cfg.LoginHint != "" {
		return def + " (" + h.cfg.LoginHint + ")"
	}
	return def
}

// describe quotes the challenge's error and description for a message.
func describe(b *Challenge) string {
	if b == nil || b.Params["error"] == "" {
		return ""
	}
	s := ": " + shortText(b.Params["error"])
	if d := b.Params["error_description"]; d != "" {
		s += " (" + shortText(d) + ")"
	}
	return s
}

// contains reports whether have holds every scope of want.
func contains(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// union appends to a the scopes of b it lacks.
func union(a []string, b ...[]string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		for _, v := range s {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Registration kinds of a Record.
const (
	registeredInAdvance = "preregistered"
	registeredByURL     = "metadata-document"
	registeredDynamic   = "dynamic"
)

// A discovery is what the metadata said.
type discovery struct {
	resource string   // the resource indicator to ask tokens for
	scopes   []string // the resource's scopes_supported
	meta     *ServerMetadata
}

// discover finds the protected resource's metadata and its authorization
// server's; hint is the challenge's resource_metadata.
func (h *Handler) discover(ctx context.Context, hint string) (*discovery, error) {
	urls := resourceURLs(h.server)
	if hint != "" {
		if _, err := checkURL("the challenge's resource_metadata", hint, false); err != nil {
			return nil, fmt.Errorf("oauth: %s: %w", h.cfg.Server, err)
		}
		if err := h.notThisMachine("the challenge's resource_metadata", hint); err != nil {
			return nil, err
		}
		urls = append([]string{hint}, urls...)
	}
	var prm *ResourceMetadata
	for _, u := range urls {
		data, err := getDocument(ctx, h.http, u)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("oauth: protected resource metadata of %s: %w", h.cfg.Server, h.redact(err))
		}
		if prm, err = DecodeResourceMetadata(data); err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, u)
		}
		if !h.forServer(prm.Resource) {
			return nil, fmt.Errorf("oauth: the protected resource metadata at %s is for %q, not for %s: refused (RFC 9728 §3.3)", u, shortText(prm.Resource), h.cfg.Server)
		}
		break
	}
	d := &discovery{resource: h.canonicalServer()}
	origin := (&url.URL{Scheme: h.server.Scheme, Host: h.server.Host}).String()
	issuers := []string{origin} // 2025-03-26: the server's origin is its authorization server
	if prm != nil {
		d.resource, d.scopes, issuers = prm.Resource, prm.ScopesSupported, prm.AuthorizationServers
	}
	issuer := issuers[0]
	if h.cfg.Issuer != "" {
		if !slices.Contains(issuers, h.cfg.Issuer) {
			return nil, fmt.Errorf("oauth: %s names the authorization servers %q, not %s, the configured issuer: refused", h.cfg.Server, issuers, h.cfg.Issuer)
		}
		issuer = h.cfg.Issuer
	}
	iu, err := checkURL("the authorization server", issuer, true)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	if err := h.notThisMachine("the authorization server", issuer); err != nil {
		return nil, err
	}
	for _, u := range serverMetadataURLs(iu) {
		data, err := getDocument(ctx, h.http, u)
		if errors.Is(err, errNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("oauth: authorization server metadata of %s: %w", issuer, h.redact(err))
		}
		if d.meta, err = DecodeServerMetadata(data, issuer); err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, u)
		}
		for _, e := range []struct{ name, url string }{
			{"authorization_endpoint", d.meta.AuthorizationEndpoint}, {"token_endpoint", d.meta.TokenEndpoint},
			{"registration_endpoint", d.meta.RegistrationEndpoint}, {"revocation_endpoint", d.meta.RevocationEndpoint},
		} {
			if err := h.notThisMachine(e.name, e.url); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	if prm != nil {
		return nil, fmt.Errorf("oauth: the authorization server %s of %s publishes no metadata (RFC 8414 or OpenID Connect Discovery)", issuer, h.cfg.Server)
	}
	// 2025-03-26 servers without any metadata: the default endpoints.
	d.meta = &ServerMetadata{
		Issuer:                        origin,
		AuthorizationEndpoint:         origin + "/authorize",
		TokenEndpoint:                 origin + "/token",
		RegistrationEndpoint:          origin + "/register",
		CodeChallengeMethodsSupported: []string{"S256"},
	}
	h.log.Info("oauth: no authorization metadata; using the default endpoints of the 2025-03-26 revision", "server", h.cfg.Server, "issuer", origin)
	return d, nil
}

// notThisMachine refuses raw, a URL the server's discovery named (name
// says which), when it is on this machine or its local network (a
// loopback, unspecified, private or link-local address, localhost or a
// name under .localhost) and the server is not: a remote server's
// discovery would have the client (and the user's browser) send
// requests, a registration or a code to services that listen only there.
// A server there may name them.
func (h *Handler) notThisMachine(name, raw string) error {
	if raw == "" || thisMachine(h.server.Hostname()) {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || thisMachine(u.Hostname()) {
		return fmt.Errorf("oauth: %s %q is on this machine or its local network, and %s is not: refused", name, shortText(raw), h.cfg.Server)
	}
	return nil
}

// thisMachine reports a host that names this machine or its local
// network: localhost, a name under .localhost (RFC 6761), a loopback,
// unspecified, private or link-local address.
func thisMachine(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if loopback.Host(h) || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast()
}

// canonicalServer is the server URL as a resource indicator: no
// fragment, scheme and host in lower case.
func (h *Handler) canonicalServer() string {
	u := *h.server
	u.Fragment, u.RawFragment = "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// authorize runs one authorization code flow. cur is the current record
// for the same authorization server, or nil.
func (h *Handler) authorize(ctx context.Context, d *discovery, cur *Record, want []string) error {
	if h.flows >= maxFlows {
		return fmt.Errorf("oauth: %s asked for %d authorizations already; giving up (reconnect to try again)", h.cfg.Server, h.flows)
	}
	scopes := h.scopes(d, cur, want)
	setKey := strings.Join(slices.Sorted(slices.Values(scopes)), " ")
	if h.attempts[setKey] >= maxSameScopes {
		return fmt.Errorf("oauth: %s keeps refusing after %d authorizations for the scopes %q; giving up", h.cfg.Server, h.attempts[setKey], setKey)
	}
	h.flows++
	h.attempts[setKey]++

	redirect, err := h.cfg.Authorizer.RedirectURI(ctx)
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if _, err := checkURL("the redirect URI", redirect, false); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if _, ok := h.cfg.Authorizer.(*Loopback); ok && h.cfg.ClientID == "" && !(h.cfg.ClientMetadataURL != "" && d.meta.ClientIDMetadataDocumentSupported) {
		// A client this Handler registers gets a redirect path per
		// authorization server (RFC 9700 §4.4.2), which the Loopback
		// holds to: a server that sends the user on to another one (a
		// mix-up) gets that one's answer, at that one's path, refused,
		// even where neither sends iss.
		redirect = strings.TrimSuffix(redirect, "/") + "/" + issuerTag(d.meta.Issuer)
	}
	client, err := h.register(ctx, d.meta, cur, redirect)
	if err != nil {
		return err
	}
	conf := client.config(d.meta, redirect, scopes)
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	h.log.Info("oauth: authorizing", "server", h.cfg.Server, "issuer", d.meta.Issuer, "scopes", strings.Join(scopes, " "), "client_id", client.ClientID)
	q, err := h.cfg.Authorizer.Authorize(ctx, authURL)
	if err != nil {
		return fmt.Errorf("oauth: authorization for %s: %w", h.cfg.Server, err)
	}
	// RFC 9207 first: a response from another issuer is not acted on,
	// not even to show its error.
	if iss, ok := q["iss"]; ok || d.meta.IssParameterSupported {
		if !ok {
			return fmt.Errorf("oauth: the authorization response carries no iss, which %s says it sends: discarded (RFC 9207)", d.meta.Issuer)
		}
		if len(iss) != 1 || iss[0] != d.meta.Issuer {
			return fmt.Errorf("oauth: the authorization response names the issuer %q, not %s: discarded (RFC 9207, a mix-up)", shortText(strings.Join(iss, " ")), d.meta.Issuer)
		}
	}
	if got := q.Get("state"); got != state {
		return errors.New("oauth: the authorization response's state does not match the request's: discarded")
	}
	if e := q.Get("error"); e != "" {
		msg := fmt.Sprintf("oauth: %s refused the authorization: %s", d.meta.Issuer, shortText(e))
		if desc := q.Get("error_description"); desc != "" {
			msg += " (" + shortText(desc) + ")"
		}
		return errors.New(msg)
	}
	code := q.Get("code")
	if code == "" || len(code) > maxTokenBytes {
		return errors.New("oauth: the authorization response carries no usable code")
	}
	tok, err := conf.Exchange(h.clientContext(ctx, ""), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	if err != nil {
		return h.tokenError("exchanging the authorization code", err, client)
	}
	rec := &Record{
		Server: h.key.Server, Principal: h.key.Principal,
		Resource: d.resource, Issuer: d.meta.Issuer,
		TokenEndpoint: d.meta.TokenEndpoint, RevocationEndpoint: d.meta.RevocationEndpoint,
		Registration: client.Registration, ClientID: client.ClientID, ClientSecret: client.ClientSecret,
		AuthMethod: client.AuthMethod, RedirectURI: client.RedirectURI,
	}
	if err := h.apply(rec, tok, scopes); err != nil {
		return err
	}
	h.log.Info("oauth: authorized", "server", h.cfg.Server, "issuer", rec.Issuer, "scopes", strings.Join(rec.Scopes, " "), "expiry", rec.Expiry)
	return h.set(ctx, rec)
}

// issuerTag names an authorization server in a redirect path.
func issuerTag(issuer string) string {
	sum := sha256.Sum256([]byte(issuer))
	return "as-" + hex.EncodeToString(sum[:8])
}

// scopes chooses the scopes to ask for: the challenge's (authoritative
// for the request), else the configured ones, else the resource's
// scopes_supported; with the configured ones and those granted before
// by the same authorization server (step-up keeps what it had), and
// offline_access when the authorization server lists it (a refresh
// token is wanted and kept safe).
func (h *Handler) scopes(d *discovery, cur *Record, want []string) []string {
	s := want
	switch {
	case len(s) > 0:
	case len(h.cfg.Scopes) > 0:
		s = h.cfg.Scopes
	default:
		s = d.scopes
	}
	s = union(s, h.cfg.Scopes)
	if cur != nil && cur.Issuer == d.meta.Issuer {
		s = union(s, cur.Scopes)
	}
	if slices.Contains(d.meta.ScopesSupported, "offline_access") {
		s = union(s, []string{"offline_access"})
	}
	return s
}

// apply puts a token response into rec, after checking it: a Bearer
// token of bounded size and, when it is a JWT, for this resource.
func (h *Handler) apply(rec *Record, tok *oauth2.Token, asked []string) error {
	switch {
	case tok.AccessToken == "":
		return fmt.Errorf("oauth: %s issued no access token", rec.Issuer)
	case len(tok.AccessToken) > maxTokenBytes || len(tok.RefreshToken) > maxTokenBytes:
		return fmt.Errorf("oauth: %s issued a token longer than %d bytes", rec.Issuer, maxTokenBytes)
	case !strings.EqualFold(tok.Type(), "Bearer"):
		return fmt.Errorf("oauth: %s issued a %q token, not a Bearer token", rec.Issuer, shortText(tok.Type()))
	}
	if aud, ok := jwtAudience(tok.AccessToken); ok && !h.audienceOK(aud, rec.Resource) {
		return fmt.Errorf("oauth: %s issued a token for the audience %q, not for %s: refused (it must not be sent to another resource)", rec.Issuer, shortText(strings.Join(aud, " ")), rec.Resource)
	}
	rec.AccessToken = Secret(tok.AccessToken)
	if tok.RefreshToken != "" {
		rec.RefreshToken = Secret(tok.RefreshToken)
	}
	rec.Obtained = time.Now()
	rec.Expiry = tok.Expiry
	rec.Scopes = asked
	if granted, _ := tok.Extra("scope").(string); granted != "" {
		g := strings.Fields(granted)
		if err := checkScopes(g); err != nil {
			// RFC 6749 §3.3: space-separated scope tokens. The record
			// keeps them and `clawtool auth` shows them.
			return fmt.Errorf("oauth: %s granted a scope that is not a list of scope tokens: %v: refused", rec.Issuer, err)
		}
		rec.Scopes = g
	}
	return nil
}

// jwtAudience returns the aud claim of token when it is a JWT with one.
func jwtAudience(token string) ([]string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, false
	}
	var claims struct {
		Aud json.RawMessage `json:"aud"`
	}
	if json.Unmarshal(payload, &claims) != nil || len(claims.Aud) == 0 {
		return nil, false
	}
	var one string
	if json.Unmarshal(claims.Aud, &one) == nil {
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(claims.Aud, &many) == nil {
		return many, true
	}
	return []string{string(claims.Aud)}, true // an aud of another type matches nothing
}

// audienceOK reports whether one of aud is resource (a trailing slash
// aside) or one of the configured audiences.
func (h *Handler) audienceOK(aud []string, resource string) bool {
	for _, a := range aud {
		if a == resource || strings.TrimSuffix(a, "/") == strings.TrimSuffix(resource, "/") || slices.Contains(h.cfg.Audiences, a) {
			return true
		}
	}
	return false
}

// A refreshCall is a refresh in progress, which concurrent callers wait for.
type refreshCall struct {
	done chan struct{}
	rec  *Record
	err  error
}

// refresh refreshes rec's access token unless another caller did
// meanwhile; concurrent calls share one refresh.
func (h *Handler) refresh(ctx context.Context, rec *Record) (*Record, error) {
	h.mu.Lock()
	if cur := h.rec; cur != nil && cur.AccessToken != rec.AccessToken && cur.AccessToken != "" && !stale(cur, time.Now()) {
		r := *cur
		h.mu.Unlock()
		return &r, nil // refreshed meanwhile
	}
	c := h.refreshing
	if c == nil {
		c = &refreshCall{done: make(chan struct{})}
		h.refreshing = c
		base := *rec
		go func() {
			// The refresh outlives a caller that gives up: others wait for it.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
			c.rec, c.err = h.lockedRefresh(rctx, &base)
			cancel()
			h.mu.Lock()
			h.refreshing = nil
			h.mu.Unlock()
			close(c.done)
		}()
	}
	h.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	r := *c.rec
	return &r, nil
}

// lockedRefresh refreshes rec holding the store's lock when the store is
// a [Locker]; once it holds the lock it reads the record again, and uses
// a token another process saved meanwhile instead of refreshing. Another
// process's refresh shows as a new access token: the refresh token stays
// the same where the authorization server does not rotate it.
func (h *Handler) lockedRefresh(ctx context.Context, rec *Record) (*Record, error) {
	l, ok := h.store.(Locker)
	if !ok {
		return h.doRefresh(ctx, rec)
	}
	unlock, err := l.Lock(ctx, h.key)
	if err != nil {
		return nil, fmt.Errorf("oauth: refreshing the token of %s: %w", h.cfg.Server, err)
	}
	defer unlock()
	stored, err := h.store.Load(ctx, h.key)
	if err != nil {
		return nil, err
	}
	if stored != nil && (stored.RefreshToken != rec.RefreshToken || stored.AccessToken != rec.AccessToken) {
		if stored.Resource != "" && !h.forServer(stored.Resource) {
			return nil, fmt.Errorf("oauth: the stored tokens of %s are for resource %s; log out to forget them", h.cfg.Server, stored.Resource)
		}
		if stored.AccessToken != "" && !stale(stored, time.Now()) {
			h.mu.Lock()
			r := *stored
			h.rec, h.loaded = &r, true
			h.mu.Unlock()
			h.log.Info("oauth: using the token another process refreshed", "server", h.cfg.Server, "expiry", stored.Expiry)
			return stored, nil
		}
		if stored.RefreshToken == "" {
			// Logged out, or refused, meanwhile.
			return nil, fmt.Errorf("%w: the tokens of %s were removed meanwhile; %s", ErrLoginRequired, h.cfg.Server, h.loginHint("log in again"))
		}
		rec = stored // rotated meanwhile but already stale: refresh with the newest
	}
	return h.doRefresh(ctx, rec)
}

// doRefresh sends one refresh_token grant for rec.
func (h *Handler) doRefresh(ctx context.Context, rec *Record) (*Record, error) {
	client := clientInfo{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, AuthMethod: rec.AuthMethod}
	conf := client.config(&ServerMetadata{TokenEndpoint: rec.TokenEndpoint}, "", nil)
	tok, err := conf.TokenSource(h.clientContext(ctx, rec.Resource), &oauth2.Token{RefreshToken: string(rec.RefreshToken)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			// Another process may have refreshed (and rotated) it.
			if stored, lerr := h.store.Load(ctx, h.key); lerr == nil && stored != nil && stored.RefreshToken != rec.RefreshToken &&
				stored.AccessToken != "" && !stale(stored, time.Now()) {
				h.mu.Lock()
				h.rec = stored
				h.mu.Unlock()
				return stored, nil
			}
			h.log.Warn("oauth: the refresh token was refused; a login is needed", "server", h.cfg.Server, "issuer", rec.Issuer, "error", re.ErrorCode)
			dead := *rec
			dead.AccessToken, dead.RefreshToken, dead.Expiry = "", "", time.Time{}
			if serr := h.set(ctx, &dead); serr != nil {
				return nil, serr
			}
			return nil, fmt.Errorf("%w: %s refused to refresh the token for %s (%s); %s", ErrLoginRequired, rec.Issuer, h.cfg.Server, shortText(re.ErrorCode), h.loginHint("log in again"))
		}
		err = h.tokenError("refreshing the token", err, client)
		h.log.Warn("oauth: refresh failed", "server", h.cfg.Server, "error", err)
		return nil, err
	}
	next := *rec
	if err := h.apply(&next, tok, rec.Scopes); err != nil {
		return nil, err
	}
	if err := h.set(ctx, &next); err != nil {
		return nil, err
	}
	h.log.Info("oauth: token refreshed", "server", h.cfg.Server, "expiry", next.Expiry)
	return &next, nil
}

// clientContext carries the Handler's HTTP client for the oauth2
// package; with resource set, token requests that lack a resource
// parameter (refreshes: the oauth2 package has no way to add one) get it.
func (h *Handler) clientContext(ctx context.Context, resource string) context.Context {
	c := h.http
	if resource != "" {
		cc := *c
		cc.Transport = resourceTransport{base: c.Transport, resource: resource}
		c = &cc
	}
	return context.WithValue(ctx, oauth2.HTTPClient, c)
}

// resourceTransport adds the RFC 8707 resource parameter to form posts
// that lack it.
type resourceTransport struct {
	base     http.RoundTripper
	resource string
}

func (t resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxResponseBytes))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	if form.Get("resource") == "" {
		form.Set("resource", t.resource)
	}
	enc := form.Encode()
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(strings.NewReader(enc))
	r.ContentLength = int64(len(enc))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(enc)), nil }
	return t.base.RoundTrip(r)
}

// tokenError turns an error of the oauth2 package into one of ours: the
// token endpoint's error code and description, never its body (which a
// malicious server could fill with what it was sent), and no secrets.
func (h *Handler) tokenError(what string, err error, client clientInfo) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := "oauth: " + what + " for " + h.cfg.Server + ": the token endpoint answered"
		if re.Response != nil {
			msg += " " + re.Response.Status
		}
		if re.ErrorCode != "" {
			msg += ": " + shortText(re.ErrorCode)
		}
		if re.ErrorDescription != "" {
			msg += " (" + shortText(re.ErrorDescription) + ")"
		}
		return errors.New(h.redact(errors.New(msg), string(client.ClientSecret)).Error())
	}
	return fmt.Errorf("oauth: %s for %s: %w", what, h.cfg.Server, h.redact(err, string(client.ClientSecret)))
}

// redact removes every secret the Handler holds from err's text.
func (h *Handler) redact(err error, more ...string) error {
	if err == nil {
		return nil
	}
	secrets := slices.Clone(more)
	secrets = append(secrets, h.cfg.ClientSecret)
	h.mu.Lock()
	if h.rec != nil {
		secrets = append(secrets, string(h.rec.AccessToken), string(h.rec.RefreshToken), string(h.rec.ClientSecret))
	}
	h.mu.Unlock()
	s := err.Error()
	changed := false
	for _, v := range secrets {
		if len(v) >= 4 && strings.Contains(s, v) {
			s, changed = strings.ReplaceAll(s, v, redacted), true
		}
	}
	if !changed {
		return err
	}
	return errors.New(s)
}
