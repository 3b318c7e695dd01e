package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/mcptool/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OAuth is the "oauth" object of a URL server: how clawtool authorizes
// with a server behind MCP authorization (OAuth 2.1; see package
// [oauth]). Every field may be left out: a URL server that answers 401
// with a Bearer challenge is authorized with dynamic client
// registration and the tokens of the last login (clawtool auth login),
// refreshed as needed. Strings expand ${NAME} references; the value of
// clientSecret is a secret, redacted like those of env and headers.
//
//	"github": {"url": "https://mcp.example.com/mcp",
//	  "oauth": {"clientId": "Iv1.abc", "clientSecret": "${GH_SECRET}",
//	            "scopes": ["repo"], "redirectPort": 8976}}
type OAuth struct {
	// Disabled sends no OAuth tokens: the server's 401 is an error.
	Disabled bool `json:"disabled,omitempty"`
	// ClientID and ClientSecret are a client registered in advance
	// with the server's authorization server; without a secret it is a
	// public client.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// Issuer, if set, is the only authorization server accepted.
	Issuer string `json:"issuer,omitempty"`
	// ClientMetadataURL is the https URL of the client's ID metadata
	// document, used with authorization servers that accept those.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Scopes are asked for in every authorization.
	Scopes []string `json:"scopes,omitempty"`
	// Audiences are further audiences accepted in JWT access tokens.
	Audiences []string `json:"audiences,omitempty"`
	// RedirectPort is the port on 127.0.0.1 the login listens on for
	// the authorization's redirect (http://127.0.0.1:PORT/callback); 0
	// picks a free one. A client registered in advance needs a fixed one.
	RedirectPort int `json:"redirectPort,omitempty"`
	// Principal names the account, when one login per server is not
	// enough (a work and a personal one); empty is the default account.
	Principal string `json:"principal,omitempty"`
}

func (x *expander) oauth(o *OAuth) error {
	if o == nil {
		return nil
	}
	var err error
	for _, p := range []*string{&o.ClientID, &o.Issuer, &o.ClientMetadataURL, &o.Principal} {
		if *p, err = x.expand(*p, false); err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
	}
	if o.ClientSecret, err = x.expand(o.ClientSecret, true); err != nil {
		return fmt.Errorf("oauth: clientSecret: %w", err)
	}
	return nil
}

func (s *Server) checkOAuth() error {
	o := s.OAuth
	if o == nil || o.Disabled {
		return nil
	}
	switch {
	case s.URL == "":
		return errors.New(`"oauth" is for URL servers; a stdio server takes its credentials from "env"`)
	case s.authorizationHeader():
		return errors.New(`both "oauth" and an Authorization header are set; use one`)
	case o.RedirectPort < 0 || o.RedirectPort > 65535:
		return errors.New(`"oauth": redirectPort must be between 0 and 65535`)
	}
	_, err := oauth.New(s.oauthConfig(nil, ""))
	return err
}

// authorizationHeader reports whether Headers set Authorization (a
// static token).
func (s *Server) authorizationHeader() bool {
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// usesOAuth reports whether the server gets an OAuth handler: a URL
// server without a static Authorization header, not disabled, that
// tokens may be sent to (https, or plain http to this machine).
func (s *Server) usesOAuth() bool {
	if s.URL == "" || s.authorizationHeader() || s.OAuth != nil && s.OAuth.Disabled {
		return false
	}
	_, err := oauth.New(oauth.Config{Server: s.URL}) // refuses plain http to another machine
	return err == nil
}

// oauthConfig is the handler configuration of the server.
func (s *Server) oauthConfig(store oauth.Store, hint string) oauth.Config {
	c := oauth.Config{Server: s.URL, Store: store, LoginHint: hint}
	if o := s.OAuth; o != nil {
		c.Principal, c.ClientID, c.ClientSecret, c.Issuer = o.Principal, o.ClientID, o.ClientSecret, o.Issuer
		c.ClientMetadataURL, c.Scopes, c.Audiences = o.ClientMetadataURL, o.Scopes, o.Audiences
	}
	return c
}

// WithTokenStore keeps the OAuth tokens of URL servers in store. The
// default is an [oauth.FileStore] in [oauth.DefaultDir]. A Host never
// asks the user: a server whose tokens do not do fails to load, with an
// error that says to log in (see [Login]).
func WithTokenStore(store oauth.Store) Option { return func(h *Host) { h.tokens = store } }

// tokenStore returns the host's token store, the default one when none
// was given.
func (h *Host) tokenStore() (oauth.Store, error) {
	if h.tokens != nil {
		return h.tokens, nil
	}
	return defaultTokenStore()
}

func defaultTokenStore() (oauth.Store, error) {
	dir, err := oauth.DefaultDir()
	if err != nil {
		return nil, err
	}
	return &oauth.FileStore{Dir: dir}, nil
}

// withOAuth gives the transport of the server named name an OAuth
// handler, when the server uses OAuth; hint, if not empty, replaces the
// default advice on how to log in.
func (h *Host) withOAuth(t mcp.Transport, name, hint string, s Server, log *slog.Logger) (mcp.Transport, error) {
	if !s.usesOAuth() {
		return t, nil
	}
	store, err := h.tokenStore()
	if err != nil {
		return nil, err
	}
	if hint == "" {
		hint = "log in with: clawtool auth login " + name + " --config FILE"
	}
	cfg := s.oauthConfig(store, hint)
	cfg.Logger = log
	handler, err := oauth.New(cfg)
	if err != nil {
		return nil, err
	}
	return attachOAuth(t, handler), nil
}

// attachOAuth puts handler into a Streamable HTTP transport.
func attachOAuth(t mcp.Transport, handler *oauth.Handler) mcp.Transport {
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		st.OAuthHandler = handler
	}
	return t
}

// LoginOptions configure [Login].
type LoginOptions struct {
	// Store keeps the tokens; nil means an [oauth.FileStore] in
	// [oauth.DefaultDir], the one a [Host] uses by default.
	Store oauth.Store
	// Open shows the user the authorization URL (see
	// [oauth.OpenBrowser]); required.
	Open func(ctx context.Context, authURL string) error
	// Logger receives what the OAuth client does; nil discards it.
	Logger *slog.Logger
}

// A LoginResult says what [Login] did.
type LoginResult struct {
	// Authorized is false when the server asked for no authorization.
	Authorized bool
	Issuer     string
	Scopes     []string
	Expiry     time.Time // zero when the token does not expire
	// Refreshable reports whether a refresh token was issued.
	Refreshable bool
	// Tools is how many tools the server listed with the new token.
	Tools int
}

// Login authorizes with the URL server the configuration names name:
// it connects without the stored token, so that the server's challenge
// starts an authorization the user completes in a browser (the
// redirect comes back to 127.0.0.1, on the server's redirectPort), keeps
// the tokens in the store, and lists the server's tools with them to
// show that they work. The configuration's settings for the server
// (oauth, headers, prefix, filter) apply; ctx bounds the whole login.
func Login(ctx context.Context, c *Config, name string, opts LoginOptions) (*LoginResult, error) {
	s, handler, err := serverHandler(c, name, opts.Store)
	if err != nil {
		return nil, err
	}
	if opts.Open == nil {
		return nil, errors.New("plugins: Login needs an Open function")
	}
	lb := &oauth.Loopback{Open: opts.Open}
	if s.OAuth != nil {
		lb.Port = s.OAuth.RedirectPort
	}
	defer lb.Close()
	cfg := s.oauthConfig(handler.store, "")
	cfg.Authorizer, cfg.Logger = lb, opts.Logger
	h, err := oauth.New(cfg)
	if err != nil {
		return nil, err
	}
	if lb.Port == 0 {
		reuseRedirectPort(ctx, h, lb)
	}
	if err := h.ForgetToken(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	t := attachOAuth(urlTransport(s.URL, s.Headers), h)
	mc, err := mcptool.Connect(ctx, t, mcptool.WithPrefix(s.Prefix), mcptool.WithFilter(s.keeps))
	if err != nil {
		return nil, fmt.Errorf("plugins: server %q: %s", name, c.Redact(err.Error()))
	}
	defer mc.Close()
	tools, err := mc.Tools(ctx)
	if err != nil && !errors.Is(err, mcptool.ErrImportLimit) {
		return nil, fmt.Errorf("plugins: server %q: %s", name, c.Redact(err.Error()))
	}
	res := &LoginResult{Tools: len(tools)}
	rec, err := h.Record(ctx)
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.AccessToken != "" && !rec.Obtained.Before(start) {
		res.Authorized, res.Issuer, res.Scopes, res.Expiry = true, rec.Issuer, rec.Scopes, rec.Expiry
		res.Refreshable = rec.RefreshToken != ""
	}
	return res, nil
}

// reuseRedirectPort has lb listen on the port of the redirect URI the
// stored dynamic registration was made for, when that port is free: the
// registration then fits the new login, and the authorization server
// does not get a new client for every login. A busy port leaves lb to
// pick a free one (and the Handler to register again).
func reuseRedirectPort(ctx context.Context, h *oauth.Handler, lb *oauth.Loopback) {
	rec, err := h.Record(ctx)
	if err != nil || rec == nil || rec.Registration != "dynamic" || rec.RedirectURI == "" {
		return
	}
	u, err := url.Parse(rec.RedirectURI)
	if err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || (u.Path != "/callback" && !strings.HasPrefix(u.Path, "/callback/")) {
		return
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port <= 0 || port > 65535 {
		return
	}
	lb.Port = port
	if _, err := lb.RedirectURI(ctx); err != nil {
		lb.Port = 0
	}
}

// Logout forgets the OAuth tokens and registration of the server the
// configuration names name, in store (nil: the default store), after
// asking the authorization server to revoke them.
func Logout(ctx context.Context, c *Config, name string, store oauth.Store) (oauth.LogoutResult, error) {
	_, h, err := serverHandler(c, name, store)
	if err != nil {
		return oauth.LogoutResult{}, err
	}
	return h.h.Logout(ctx)
}

// AuthStatus returns what store (nil: the default store) holds for the
// server the configuration names name, or nil. Its secrets print as
// the redaction marker.
func AuthStatus(ctx context.Context, c *Config, name string, store oauth.Store) (*oauth.Record, error) {
	_, h, err := serverHandler(c, name, store)
	if err != nil {
		return nil, err
	}
	return h.h.Record(ctx)
}

// namedHandler is a non-interactive handler of a configured server.
type namedHandler struct {
	h     *oauth.Handler
	store oauth.Store
}

func serverHandler(c *Config, name string, store oauth.Store) (Server, namedHandler, error) {
	s, ok := c.Servers[name]
	switch {
	case !ok:
		return s, namedHandler{}, fmt.Errorf("plugins: the configuration names no server %q", name)
	case s.URL == "":
		return s, namedHandler{}, fmt.Errorf("plugins: server %q is a stdio server; OAuth is for URL servers", name)
	case !s.usesOAuth():
		return s, namedHandler{}, fmt.Errorf("plugins: server %q does not use OAuth (it has an Authorization header, \"oauth\": {\"disabled\": true}, or a plain http URL to another machine)", name)
	}
	if store == nil {
		var err error
		if store, err = defaultTokenStore(); err != nil {
			return s, namedHandler{}, err
		}
	}
	h, err := oauth.New(s.oauthConfig(store, ""))
	if err != nil {
		return s, namedHandler{}, err
	}
	return s, namedHandler{h, store}, nil
}
