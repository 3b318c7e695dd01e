package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/internal/loopback"
)

// Bounds of what the authorization's HTTP exchanges read.
const (
	// MaxResponseBytes bounds the body of every response read from a
	// protected resource's metadata, an authorization server's metadata,
	// registration and token endpoints: a larger one is an error.
	MaxResponseBytes = 64 << 10
	// maxRedirects bounds the redirects one of those requests follows.
	maxRedirects = 3
	// requestTimeout bounds one of those requests.
	requestTimeout = 30 * time.Second
	// maxTokenBytes bounds an access or refresh token accepted.
	maxTokenBytes = 16 << 10
)

// ResourceMetadata is a protected resource's metadata (RFC 9728 §2), the
// fields an MCP client uses.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// ServerMetadata is an authorization server's metadata (RFC 8414 §2, or
// OpenID Connect Discovery), the fields an MCP client uses.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
}

// DecodeResourceMetadata decodes and checks a protected resource's
// metadata document: valid JSON of at most [MaxResponseBytes], a
// resource that is an absolute https URL (http only on a loopback host)
// without a fragment, at least one authorization server, each an issuer
// URL of the same kind without a query. It does not compare the resource
// with the server's URL; [Handler] does.
func DecodeResourceMetadata(data []byte) (*ResourceMetadata, error) {
	var m ResourceMetadata
	if err := decodeJSON(data, &m); err != nil {
		return nil, fmt.Errorf("oauth: protected resource metadata: %w", err)
	}
	if _, err := checkURL("resource", m.Resource, false); err != nil {
		return nil, fmt.Errorf("oauth: protected resource metadata: %w", err)
	}
	if len(m.AuthorizationServers) == 0 {
		return nil, errors.New("oauth: protected resource metadata names no authorization_servers")
	}
	for _, as := range m.AuthorizationServers {
		if _, err := checkURL("authorization_servers", as, true); err != nil {
			return nil, fmt.Errorf("oauth: protected resource metadata: %w", err)
		}
	}
	if err := checkScopes(m.ScopesSupported); err != nil {
		return nil, fmt.Errorf("oauth: protected resource metadata: scopes_supported: %w", err)
	}
	return &m, nil
}

// DecodeServerMetadata decodes and checks an authorization server's
// metadata document fetched for the issuer URL issuer: valid JSON of at
// most [MaxResponseBytes] whose "issuer" is issuer exactly (RFC 8414
// §3.3: no normalisation), with authorization and token endpoints (and
// registration and revocation endpoints, when given) that are absolute
// https URLs (http only on a loopback host), that supports the code
// response type and PKCE with S256 (the MCP specification: a server that
// lists no code_challenge_methods_supported does not support PKCE, and
// the client must refuse it).
func DecodeServerMetadata(data []byte, issuer string) (*ServerMetadata, error) {
	var m ServerMetadata
	if err := decodeJSON(data, &m); err != nil {
		return nil, fmt.Errorf("oauth: authorization server metadata: %w", err)
	}
	if m.Issuer != issuer {
		return nil, fmt.Errorf("oauth: authorization server metadata: issuer %q is not %q, the authorization server it was fetched for", shortText(m.Issuer), issuer)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("oauth: authorization server metadata of %s: %w", issuer, err)
	}
	return &m, nil
}

func (m *ServerMetadata) check() error {
	for _, f := range []struct {
		name, value string
		required    bool
	}{
		{"authorization_endpoint", m.AuthorizationEndpoint, true},
		{"token_endpoint", m.TokenEndpoint, true},
		{"registration_endpoint", m.RegistrationEndpoint, false},
		{"revocation_endpoint", m.RevocationEndpoint, false},
	} {
		if f.value == "" && !f.required {
			continue
		}
		if _, err := checkURL(f.name, f.value, false); err != nil {
			return err
		}
	}
	if len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return errors.New("it does not support the authorization code flow (response_types_supported lacks \"code\")")
	}
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return errors.New("it does not say it supports PKCE with S256 (code_challenge_methods_supported), which MCP requires")
	}
	return checkScopes(m.ScopesSupported)
}

// decodeJSON decodes one JSON object of at most MaxResponseBytes.
func decodeJSON(data []byte, v any) error {
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("longer than %d bytes", MaxResponseBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// Say which field and what kind of value, not the Go type the
			// decoder wanted (an anonymous struct reads as noise).
			where := "the document"
			if te.Field != "" {
				where = fmt.Sprintf("field %q", shortText(te.Field))
			}
			return fmt.Errorf("not valid JSON of the expected shape: %s is a JSON %s, want %s", where, te.Value, jsonKind(te.Type))
		}
		return fmt.Errorf("not valid JSON of the expected shape: %v", err)
	}
	return nil
}

// jsonKind names the kind of JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// checkScopes refuses scope values RFC 6749 §3.3 does not allow, which
// would be sent on in a scope parameter.
func checkScopes(scopes []string) error {
	if len(scopes) > 256 {
		return errors.New("more than 256 scopes")
	}
	for _, s := range scopes {
		if s == "" || len(s) > 256 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			return fmt.Errorf("%q is not a scope token", shortText(s))
		}
	}
	return nil
}

// checkURL checks that raw, the value of the metadata field name, is an
// absolute https URL, or http on a loopback host, with a host, without
// user information or a fragment (and, for an issuer, without a query).
func checkURL(name, raw string, issuer bool) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("%s is missing", name)
	}
	if len(raw) > 2048 {
		return nil, fmt.Errorf("%s is longer than 2048 bytes", name)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a URL", name, shortText(raw))
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("%s %q is not an https URL", name, shortText(raw))
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("%s %q has no host", name, shortText(raw))
	case u.Scheme == "http" && !loopback.Host(u.Hostname()):
		return nil, fmt.Errorf("%s %q is plain http to a host that is not loopback; OAuth needs https", name, shortText(raw))
	case u.User != nil:
		return nil, fmt.Errorf("%s %q carries user information", name, shortText(raw))
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%s %q has a fragment", name, shortText(raw))
	case issuer && (u.RawQuery != "" || u.ForceQuery):
		return nil, fmt.Errorf("%s %q has a query", name, shortText(raw))
	}
	return u, nil
}

// resourceURLs lists where a protected resource's metadata may be, in
// the order the MCP specification gives: at the path of the server's
// endpoint inserted after the well-known prefix, then at the root.
func resourceURLs(server *url.URL) []string {
	base := url.URL{Scheme: server.Scheme, Host: server.Host}
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		u := base
		u.Path = "/.well-known/oauth-protected-resource" + server.Path
		out = append(out, u.String())
	}
	u := base
	u.Path = "/.well-known/oauth-protected-resource"
	return append(out, u.String())
}

// serverMetadataURLs lists where the metadata of the authorization server
// whose issuer is issuer may be, in the order the MCP specification
// gives: RFC 8414 then OpenID Connect Discovery, path inserted after the
// well-known prefix, and for an issuer with a path, OpenID Connect's
// path-appended form last.
func serverMetadataURLs(issuer *url.URL) []string {
	base := url.URL{Scheme: issuer.Scheme, Host: issuer.Host}
	p := strings.TrimSuffix(issuer.Path, "/")
	at := func(path string) string {
		u := base
		u.Path = path
		return u.String()
	}
	if p == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + p),
		at("/.well-known/openid-configuration" + p),
		at(p + "/.well-known/openid-configuration"),
	}
}

// errNotFound is a metadata document that is not there (404 or 410),
// which lets discovery try the next place.
var errNotFound = errors.New("not found")

// getDocument fetches the JSON document at u with c, reading at most
// MaxResponseBytes of it. A 404 or 410 gives errNotFound.
func getDocument(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, errNotFound
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return readBounded(resp.Body)
}

// readBounded reads all of r, refusing more than MaxResponseBytes.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("the response is longer than %d bytes", MaxResponseBytes)
	}
	return b, nil
}

// newHTTPClient returns the client of the authorization's requests:
// based on base (http.DefaultClient when nil), with a time limit per
// request, at most maxRedirects redirects, none of which leaves https
// for plain http to a host that is not loopback, and response bodies cut
// at MaxResponseBytes (a longer body reads as an error). A redirect to
// another origin (scheme, host and port) is refused.
func newHTTPClient(base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	if c.Timeout == 0 {
		c.Timeout = requestTimeout
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = boundedTransport{rt}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if _, err := checkURL("a redirect", req.URL.String(), false); err != nil {
			return err
		}
		// A redirect to another origin would carry a token request's
		// body (a code and its verifier, a refresh token, a client
		// secret) there, or take a token response or a metadata
		// document, whose issuer check then means nothing, from there.
		if from := via[0].URL; !sameOrigin(from, req.URL) {
			return fmt.Errorf("a redirect from %s to another origin, %s: refused", origin(from), origin(req.URL))
		}
		return nil
	}
	return &c
}

// boundedTransport cuts response bodies at MaxResponseBytes.
type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("oauth: response longer than %d bytes", MaxResponseBytes)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// shortText returns s cut to 200 bytes with control characters replaced,
// for error messages that quote what a remote server sent.
func shortText(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// sameOrigin reports whether a and b have the same scheme and host
// (ports included), without regard to case.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

// origin returns u's scheme and host, for messages.
func origin(u *url.URL) string {
	return shortText(u.Scheme + "://" + u.Host)
}

// hostPort returns u's host with its port, the default port of the
// scheme written out.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// covers reports whether the resource identifier resource covers the
// server endpoint server: the same origin, and server's path is
// resource's path or below it (at a segment boundary). A protected
// resource's metadata for another resource must not be used (RFC 9728
// §3.3).
func covers(resource, server *url.URL) bool {
	if !sameOrigin(resource, server) {
		return false
	}
	rp := strings.TrimSuffix(resource.Path, "/")
	sp := strings.TrimSuffix(server.Path, "/")
	return rp == "" || sp == rp || strings.HasPrefix(sp, rp+"/")
}
