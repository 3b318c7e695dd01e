package bearer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// ErrInvalidToken is wrapped by a [TokenVerifier] for a token it does
// not accept: malformed, forged, expired, or for another audience.
// A token that cannot be checked now, because its key cannot be fetched,
// gets an error wrapping [ErrKeysUnavailable] instead.
var ErrInvalidToken = errors.New("invalid token")

// A TokenVerifier turns a bearer token into the principal it was issued
// for, as an OAuth 2.1 resource server does.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (policy.Principal, error)
}

// An ExpiringVerifier is a [TokenVerifier] that also says until when a
// token it accepts is accepted. [RequireToken] ends each request made
// with such a token at that time, so that a response that lasts (an
// event stream) never serves past its credential.
type ExpiringVerifier interface {
	TokenVerifier
	// VerifyTokenUntil is VerifyToken, and also returns the time from
	// which the token is no longer accepted; the zero time if never.
	VerifyTokenUntil(ctx context.Context, token string) (policy.Principal, time.Time, error)
}

// maxTokenBytes bounds the bearer tokens read.
const maxTokenBytes = 16 << 10

// A JWTVerifier verifies JSON Web Tokens signed with keys it knows: the
// static set Keys, then Source (such as a [JWKS] fetched from the
// authorization server) for a kid Keys lacks. A token is accepted
// when its signature verifies with the key its "kid" header names (the key
// under "" when it names none), its algorithm fits that key (HMAC for a
// []byte, RS/PS for an RSA key, ES for an ECDSA key, EdDSA for Ed25519),
// it has not expired ("exp" is required), it is not used before "nbf",
// and its "iss" and "aud" are Issuer and Audience. A token whose header
// has "crit" is refused: it names extensions that must be understood
// (RFC 7515, section 4.1.11), and the verifier understands none. Keys
// embedded in the token ("jwk", "jku", "x5c", "x5u") are never used.
// The principal's ID is the "sub" claim, its roles the RolesClaim claim
// (a list of strings, or one string for one role; a claim of any other
// shape refuses the token, since a role left out could be the one a
// forbid names), and its attributes the claims named in AttrClaims (an
// attribute the policies cannot read refuses the principal's calls: see
// [policy.Principal]).
// A token whose header or claims are not JSON every parser reads alike is
// refused: two keys of one object equal (or equal but for case), a string
// that is not valid UTF-8 or holds a lone surrogate escape, nesting past
// 64 levels. Numbers are read exactly, as written: a claim of
// 9007199254740993 is that number, never the float64 9007199254740992.
// A date ("exp", "nbf", "iat") must be a number from 0 to the end of year
// 9999.
// An error of Source wrapping [ErrKeysUnavailable] is passed on as such.
type JWTVerifier struct {
	Keys       map[string]any
	Source     KeySource // consulted for a kid Keys lacks; may be nil
	Issuer     string
	Audience   string
	RolesClaim string // default "roles"
	AttrClaims []string
	Leeway     time.Duration
	Now        func() time.Time // default time.Now
}

// VerifyToken implements [TokenVerifier].
func (v *JWTVerifier) VerifyToken(ctx context.Context, token string) (policy.Principal, error) {
	p, _, err := v.VerifyTokenUntil(ctx, token)
	return p, err
}

// VerifyTokenUntil implements [ExpiringVerifier]: a token is accepted
// until its "exp" plus Leeway, on the clock of time.Now (when Now is
// set, the time left by Now is counted from time.Now).
func (v *JWTVerifier) VerifyTokenUntil(ctx context.Context, token string) (policy.Principal, time.Time, error) {
	if len(token) > maxTokenBytes {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, maxTokenBytes)
	}
	if v.Issuer == "" || v.Audience == "" {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: the verifier has no issuer or audience configured", ErrInvalidToken)
	}
	opts := []jwt.ParserOption{
		jwt.WithIssuer(v.Issuer), jwt.WithAudience(v.Audience), jwt.WithExpirationRequired(),
		jwt.WithLeeway(v.Leeway), jwt.WithValidMethods([]string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}),
	}
	if v.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(v.Now))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errors.New(`the header names critical extensions ("crit"), which this verifier does not understand`)
		}
		kid, _ := t.Header["kid"].(string)
		key, ok := v.Keys[kid]
		if !ok && v.Source != nil {
			k, err := v.Source.Key(ctx, kid, t.Method.Alg())
			if err != nil {
				return nil, err
			}
			key, ok = k, true
		}
		if !ok {
			return nil, fmt.Errorf("unknown key %q", kid)
		}
		var fits bool
		switch key.(type) {
		case []byte:
			_, fits = t.Method.(*jwt.SigningMethodHMAC)
		case *rsa.PublicKey:
			_, fits = t.Method.(*jwt.SigningMethodRSA)
			if !fits {
				_, fits = t.Method.(*jwt.SigningMethodRSAPSS)
			}
		case *ecdsa.PublicKey:
			_, fits = t.Method.(*jwt.SigningMethodECDSA)
		case ed25519.PublicKey:
			_, fits = t.Method.(*jwt.SigningMethodEd25519)
		}
		if !fits {
			return nil, fmt.Errorf("algorithm %s does not fit key %q", t.Method.Alg(), kid)
		}
		return key, nil
	})
	if errors.Is(err, ErrKeysUnavailable) {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: %v", ErrKeysUnavailable, err)
	}
	if err != nil {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	// The claims the principal is made of are read again from the bytes
	// the issuer signed, exactly: encoding/json keeps the last of two
	// equal keys (other parsers the first), reads invalid UTF-8 and lone
	// surrogates as U+FFFD, and numbers as float64 (9007199254740993 as
	// 9007199254740992), so the policies would judge another principal
	// than the one signed.
	claims, err = exactClaims(token)
	if err != nil {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: no subject", ErrInvalidToken)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		// The parser requires and checks exp: not reached.
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: no expiry", ErrInvalidToken)
	}
	until := exp.Add(v.Leeway)
	if v.Now != nil {
		until = time.Now().Add(until.Sub(v.Now()))
	}
	p := policy.Principal{ID: sub}
	rc := v.RolesClaim
	if rc == "" {
		rc = "roles"
	}
	// A role left out could be the one a forbid names: a claim of
	// another shape refuses the token.
	switch roles := claims[rc].(type) {
	case nil:
	case string:
		p.Roles = []string{roles}
	case []any:
		for _, r := range roles {
			s, ok := r.(string)
			if !ok {
				return policy.Principal{}, time.Time{}, fmt.Errorf("%w: the %q claim holds a %s, not a role's name", ErrInvalidToken, rc, jsonType(r))
			}
			p.Roles = append(p.Roles, s)
		}
	default:
		return policy.Principal{}, time.Time{}, fmt.Errorf("%w: the %q claim is a %s, not a list of roles", ErrInvalidToken, rc, jsonType(roles))
	}
	for _, name := range v.AttrClaims {
		if val, ok := claims[name]; ok {
			if p.Attrs == nil {
				p.Attrs = map[string]any{}
			}
			p.Attrs[name] = val
		}
	}
	return p, until, nil
}

// RequireToken returns HTTP middleware for a resource server: a request
// whose Authorization header carries a bearer token v accepts goes on
// with the token's principal on its context ([policy.PrincipalFrom]); any other
// is refused, and the next handler is not called. The refusal is 401
// Unauthorized with a WWW-Authenticate challenge that points to the
// protected-resource metadata at metadataURL (RFC 9728), with
// error="invalid_token" when a token was sent (RFC 6750); 400 Bad
// Request with error="invalid_request" for a request with more than one
// Authorization header, which could be read as either; and 503 Service
// Unavailable, with Retry-After, when the token's key cannot be fetched
// ([ErrKeysUnavailable]). When v is an [ExpiringVerifier], the request's
// context ends when its token expires: a response still being served
// then (an event stream, a call) is cut, and a client goes on with a
// new request carrying a fresh token.
func RequireToken(v TokenVerifier, metadataURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.Header.Values("Authorization")) > 1 {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, error="invalid_request", error_description="more than one Authorization header"`, metadataURL))
				http.Error(w, "bad request: more than one Authorization header", http.StatusBadRequest)
				return
			}
			scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			var p policy.Principal
			var until time.Time
			err := fmt.Errorf("%w: no bearer token", ErrInvalidToken)
			if strings.EqualFold(scheme, "Bearer") && token != "" {
				if ev, ok := v.(ExpiringVerifier); ok {
					p, until, err = ev.VerifyTokenUntil(r.Context(), strings.TrimSpace(token))
				} else {
					p, err = v.VerifyToken(r.Context(), strings.TrimSpace(token))
				}
			}
			if errors.Is(err, ErrKeysUnavailable) {
				w.Header().Set("Retry-After", "60")
				http.Error(w, "service unavailable: the authorization server's signing keys cannot be fetched; try again later", http.StatusServiceUnavailable)
				return
			}
			if err != nil {
				challenge := fmt.Sprintf("Bearer resource_metadata=%q", metadataURL)
				if token != "" {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
			ctx := policy.WithPrincipal(r.Context(), p)
			if !until.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, until)
				defer cancel()
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// ResourceMetadata is the OAuth 2.0 protected resource metadata of RFC
// 9728, served by [ResourceMetadata.ServeHTTP] at
// /.well-known/oauth-protected-resource.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	ScopesSupported      []string `json:"scopes_supported,omitempty"`
	BearerMethods        []string `json:"bearer_methods_supported,omitempty"`
}

// ServeHTTP answers GET with the metadata as JSON.
func (m ResourceMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if m.BearerMethods == nil {
		m.BearerMethods = []string{"header"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// exactClaims checks that the header and the claims of token, which
// the parser has accepted, are strict JSON (see residual.Strict), and
// returns the claims decoded with their numbers as written.
func exactClaims(token string) (jwt.MapClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("the token is not three segments")
	}
	var claims jwt.MapClaims
	for i, what := range []string{"header", "claims"} {
		seg, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return nil, fmt.Errorf("the token's %s: not base64url", what)
		}
		if err := residual.Strict(seg); err != nil {
			msg := err.Error()
			if se, ok := errors.AsType[*residual.StrictError](err); ok {
				msg = se.Msg
			}
			return nil, fmt.Errorf("the token's %s: not JSON every parser reads alike: %s", what, msg)
		}
		if what == "claims" {
			dec := json.NewDecoder(bytes.NewReader(seg))
			dec.UseNumber()
			if err := dec.Decode(&claims); err != nil || claims == nil {
				return nil, fmt.Errorf("the token's claims: not a JSON object: %v", err)
			}
		}
	}
	// A date past 2^63 seconds becomes an int64 by a float conversion
	// whose result depends on the processor (on amd64, an nbf of 1e19
	// was the distant past): dates are bounded to years 1970 to 9999.
	for _, name := range []string{"exp", "nbf", "iat"} {
		v, ok := claims[name]
		if !ok {
			continue
		}
		n, isNum := v.(json.Number)
		f, err := n.Float64()
		if !isNum || err != nil || f < 0 || f > maxNumericDate {
			return nil, fmt.Errorf("the token's %q claim is not a date from 0 to %d seconds", name, maxNumericDate)
		}
	}
	return claims, nil
}

// maxNumericDate is the last second of year 9999, the latest date a
// token may name.
const maxNumericDate = 253402300799

// jsonType names the JSON type of a decoded claim, for a message.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
