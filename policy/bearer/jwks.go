package bearer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// A KeySource supplies the keys a [JWTVerifier] does not hold in its
// Keys. Key returns the public key named kid ("" when the token names
// none) for a token signed with the algorithm alg, or an error when there
// is none; it may fetch, so it must honour ctx.
type KeySource interface {
	Key(ctx context.Context, kid, alg string) (any, error)
}

// Defaults of a [JWKS].
const (
	// DefaultJWKSMaxBytes bounds the body of one fetch.
	DefaultJWKSMaxBytes = 1 << 20
	// DefaultJWKSTimeout bounds one fetch.
	DefaultJWKSTimeout = 10 * time.Second
	// DefaultJWKSRefresh is how long a fetched set is used.
	DefaultJWKSRefresh = time.Hour
	// DefaultJWKSMinRefresh is the least time between two fetches.
	DefaultJWKSMinRefresh = time.Minute
	// DefaultJWKSMaxStale is how long past its refresh a set stays in
	// force while it cannot be fetched again.
	DefaultJWKSMaxStale = time.Hour
	// maxJWKSKeys bounds the keys kept from one set.
	maxJWKSKeys = 100
)

// jwksClient fetches key sets when a JWKS has no Client: it follows at
// most 5 redirects, and none from https to http.
var jwksClient = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("a redirect from https to " + req.URL.Scheme)
	}
	return protectedURL(req.URL)
}}

// ErrUnknownKey is wrapped by [JWKS.Key] when the set has no usable key
// for the kid asked for.
var ErrUnknownKey = errors.New("unknown key")

// ErrKeysUnavailable is wrapped by a [KeySource] that cannot tell whether
// it has the key asked for: [JWKS.Key] when no key set could be fetched
// yet, or when the fetch for a kid the last good set lacks failed. A
// [JWTVerifier] passes it on, and [RequireToken] answers 503: the token
// may be good, but it cannot be checked now.
var ErrKeysUnavailable = errors.New("the signing keys cannot be fetched")

// A JWKS is a [KeySource] that fetches a JSON Web Key Set (RFC 7517) from
// URL, as an authorization server publishes its signing keys (its
// jwks_uri). The zero value except URL is ready to use; it is safe for
// concurrent use.
//
// The set is fetched on first use and kept; it is fetched again once it
// is Refresh old (or sooner when the response's Cache-Control max-age
// says so, but never sooner than MinRefresh), with If-None-Match when the
// server sent an ETag. A token naming a kid the set lacks makes it fetch
// at once, to pick up a rotated key, but at most once per MinRefresh, so
// a stream of tokens with made-up kids cannot make it fetch on each.
// Concurrent callers share one fetch; while a set is being refreshed,
// the keys it holds are used without waiting.
//
// The set is fetched over https, or plain http to this machine's
// loopback only (a redirect too): over plain http to another machine,
// whoever is on the path could answer with their own key, and the URL is
// refused before anything is sent.
//
// A fetch reads at most MaxBytes of the body and gives up after Timeout
// (or when the caller's context ends). A fetch that fails (the server
// down, an error status, a body too large or not a key set) leaves the
// last good set in force, and is retried no sooner than MinRefresh later;
// a key the set in force cannot answer for then (no set fetched yet, or
// a kid it lacks whose fetch failed) is an error wrapping
// [ErrKeysUnavailable], never a key. The last good set stays in force
// for at most MaxStale past its refresh: after that, while fetches fail,
// every key is an error wrapping [ErrKeysUnavailable], so that a key the
// authorization server has dropped stops being accepted even when its
// set cannot be fetched.
// Keys that cannot be used are skipped, each with the reason ([JWKS.Skipped]):
// a "use" other than "sig", a "key_ops" without "verify", members that
// JSON parsers read apart (two equal, or equal but for case), symmetric
// ("oct") keys, which have no place in a published set, RSA keys under
// 2048 bits, points not on their curve, unknown key types, repeated kids. A key whose "alg" is set is
// used only for tokens signed with that algorithm.
type JWKS struct {
	URL        string
	Client     *http.Client  // default: 5 redirects at most, none from https to http
	MaxBytes   int64         // default DefaultJWKSMaxBytes
	Timeout    time.Duration // default DefaultJWKSTimeout
	Refresh    time.Duration // default DefaultJWKSRefresh
	MinRefresh time.Duration // default DefaultJWKSMinRefresh
	MaxStale   time.Duration // default DefaultJWKSMaxStale
	Logger     *slog.Logger  // fetch failures and skipped keys; default none

	mu       sync.Mutex
	keys     map[string]jwk // nil until a fetch succeeds
	skipped  []string
	etag     string
	expires  time.Time     // when the set is due to be fetched again
	tried    time.Time     // the last fetch's start
	fetching chan struct{} // closed when the fetch under way ends
}

// jwk is one usable key of a set.
type jwk struct {
	key any
	alg string // "" when the set does not restrict it
}

// Key implements [KeySource].
func (s *JWKS) Key(ctx context.Context, kid, alg string) (any, error) {
	waited := false
	for {
		s.mu.Lock()
		now := time.Now()
		k, known := s.keys[kid]
		stale := s.keys == nil || !now.Before(s.expires)
		tooOld := s.keys != nil && !now.Before(s.expires.Add(s.maxStale()))
		mayFetch := s.tried.IsZero() || now.Sub(s.tried) >= s.minRefresh()
		if s.fetching != nil && !waited && (!known || tooOld) {
			wait := s.fetching
			s.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, fmt.Errorf("jwks %s: %w", s.URL, context.Cause(ctx))
			}
			waited = true
			continue
		}
		if !waited && (!known || stale) && mayFetch && s.fetching == nil {
			done := make(chan struct{})
			s.fetching, s.tried = done, now
			s.mu.Unlock()
			err := s.fetch(ctx)
			s.mu.Lock()
			s.fetching = nil
			if err != nil && ctx.Err() != nil {
				s.tried = time.Time{} // the caller gave up: no reason to hold others back
			}
			close(done)
			s.mu.Unlock()
			if err != nil && s.Logger != nil {
				s.Logger.WarnContext(ctx, "jwks fetch failed; the last good key set stays in force", "url", s.URL, "error", err)
			}
			waited = true
			if err != nil && !known {
				s.mu.Lock()
				_, ok := s.keys[kid]
				s.mu.Unlock()
				if !ok {
					return nil, fmt.Errorf("jwks %s: key %q: %w: %w", s.URL, kid, ErrKeysUnavailable, err)
				}
			}
			continue
		}
		noSet := s.keys == nil
		s.mu.Unlock()
		if !known && noSet {
			// No set fetched yet (the last fetch failed, and the next
			// is not due): nothing says whether the kid is good.
			return nil, fmt.Errorf("jwks %s: key %q: %w: no key set fetched yet", s.URL, kid, ErrKeysUnavailable)
		}
		if tooOld {
			// The set could not be fetched again for MaxStale past its
			// refresh: it may still hold keys since dropped.
			return nil, fmt.Errorf("jwks %s: key %q: %w: the last key set fetched is more than %v past its refresh", s.URL, kid, ErrKeysUnavailable, s.maxStale())
		}
		if !known {
			return nil, fmt.Errorf("jwks %s: %w %q", s.URL, ErrUnknownKey, kid)
		}
		if k.alg != "" && k.alg != alg {
			return nil, fmt.Errorf("jwks %s: key %q is for %s, not %s", s.URL, kid, k.alg, alg)
		}
		return k.key, nil
	}
}

// Skipped returns why each key of the last set fetched was left out.
func (s *JWKS) Skipped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.skipped...)
}

func (s *JWKS) maxStale() time.Duration {
	if s.MaxStale > 0 {
		return s.MaxStale
	}
	return DefaultJWKSMaxStale
}

func (s *JWKS) minRefresh() time.Duration {
	if s.MinRefresh > 0 {
		return s.MinRefresh
	}
	return DefaultJWKSMinRefresh
}

// fetch gets the set and, when it is good, makes it the one in force.
func (s *JWKS) fetch(ctx context.Context) error {
	timeout, limit, client := s.Timeout, s.MaxBytes, s.Client
	if timeout <= 0 {
		timeout = DefaultJWKSTimeout
	}
	if limit <= 0 {
		limit = DefaultJWKSMaxBytes
	}
	if client == nil {
		client = jwksClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return err
	}
	if err := protectedURL(req.URL); err != nil {
		return err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	s.mu.Lock()
	if s.etag != "" && s.keys != nil {
		req.Header.Set("If-None-Match", s.etag)
	}
	s.mu.Unlock()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ttl := s.ttl(resp.Header.Get("Cache-Control"))
	if resp.StatusCode == http.StatusNotModified {
		s.mu.Lock()
		if s.keys != nil {
			s.expires = time.Now().Add(ttl)
		}
		s.mu.Unlock()
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return err
	}
	if int64(len(body)) > limit {
		return fmt.Errorf("the key set is larger than %d bytes", limit)
	}
	keys, skipped, err := parseJWKS(body)
	if err != nil {
		return err
	}
	for _, why := range skipped {
		if s.Logger != nil {
			s.Logger.WarnContext(ctx, "jwks key skipped", "url", s.URL, "reason", why)
		}
	}
	s.mu.Lock()
	s.keys, s.skipped, s.etag = keys, skipped, resp.Header.Get("ETag")
	s.expires = time.Now().Add(ttl)
	s.mu.Unlock()
	return nil
}

// ttl is how long a response may be used: its max-age (no-cache and
// no-store count as 0), within [MinRefresh, Refresh].
func (s *JWKS) ttl(cacheControl string) time.Duration {
	hi := s.Refresh
	if hi <= 0 {
		hi = DefaultJWKSRefresh
	}
	ttl := hi
	for _, dir := range strings.Split(cacheControl, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
		switch strings.ToLower(name) {
		case "max-age":
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n >= 0 && n < int64(hi/time.Second) {
				ttl = min(ttl, time.Duration(n)*time.Second)
			}
		case "no-cache", "no-store":
			ttl = 0
		}
	}
	return max(ttl, min(s.minRefresh(), hi))
}

// rawJWK is a key as a set holds it.
type rawJWK struct {
	Kty, Kid, Use, Alg, Crv string
	N, E, X, Y, K           string
	// KeyOps is nil when the key has no "key_ops".
	KeyOps []string `json:"key_ops"`
}

// parseJWKS reads a key set, keeping the keys it can use.
func parseJWKS(body []byte) (map[string]jwk, []string, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	if set.Keys == nil {
		return nil, nil, errors.New(`not a JSON Web Key Set: no "keys" array`)
	}
	keys := map[string]jwk{}
	var skipped []string
	for i, raw := range set.Keys {
		var r rawJWK
		if err := json.Unmarshal(raw, &r); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		name := fmt.Sprintf("key %d (kid %q)", i, r.Kid)
		// A member two parsers read apart ("use":"enc" beside "USE":"sig",
		// which encoding/json reads case-insensitively, keeping the
		// last) says nothing sure about the key.
		if err := residual.Strict(raw); err != nil {
			msg := err.Error()
			if se, ok := errors.AsType[*residual.StrictError](err); ok {
				msg = se.Msg
			}
			skipped = append(skipped, fmt.Sprintf("%s: not JSON every parser reads alike: %s", name, msg))
			continue
		}
		if len(keys) >= maxJWKSKeys {
			skipped = append(skipped, fmt.Sprintf("%s: more than %d keys", name, maxJWKSKeys))
			continue
		}
		if _, dup := keys[r.Kid]; dup {
			skipped = append(skipped, name+": the kid is repeated; the first key with it is used")
			continue
		}
		if r.Use != "" && r.Use != "sig" {
			skipped = append(skipped, fmt.Sprintf("%s: use %q is not sig", name, r.Use))
			continue
		}
		if r.KeyOps != nil && !slices.Contains(r.KeyOps, "verify") {
			skipped = append(skipped, fmt.Sprintf("%s: key_ops %q does not hold verify", name, r.KeyOps))
			continue
		}
		k, err := r.key()
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		keys[r.Kid] = jwk{key: k, alg: r.Alg}
	}
	return keys, skipped, nil
}

func b64(field, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("%s is not base64url", field)
	}
	return b, nil
}

// key returns the public key r describes.
func (r rawJWK) key() (any, error) {
	switch r.Kty {
	case "RSA":
		n, err := b64("n", r.N)
		if err != nil {
			return nil, err
		}
		e, err := b64("e", r.E)
		if err != nil {
			return nil, err
		}
		if len(e) > 4 {
			return nil, errors.New("the RSA exponent is too large")
		}
		k := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if k.N.BitLen() < 2048 || k.N.BitLen() > 8192 {
			return nil, fmt.Errorf("an RSA key of %d bits; 2048 to 8192 are accepted", k.N.BitLen())
		}
		if k.E < 3 || k.E%2 == 0 {
			return nil, errors.New("the RSA exponent is invalid")
		}
		return k, nil
	case "EC":
		var curve elliptic.Curve
		switch r.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, fmt.Errorf("unknown curve %q", r.Crv)
		}
		size := (curve.Params().BitSize + 7) / 8
		x, err := b64("x", r.X)
		if err != nil {
			return nil, err
		}
		y, err := b64("y", r.Y)
		if err != nil {
			return nil, err
		}
		if len(x) != size || len(y) != size {
			return nil, fmt.Errorf("the point's coordinates are not %d bytes long", size)
		}
		point := append(append([]byte{4}, x...), y...)
		k, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return nil, fmt.Errorf("the point is not on curve %s", r.Crv)
		}
		return k, nil
	case "OKP":
		if r.Crv != "Ed25519" {
			return nil, fmt.Errorf("unknown curve %q", r.Crv)
		}
		x, err := b64("x", r.X)
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, errors.New("an Ed25519 key is 32 bytes long")
		}
		return ed25519.PublicKey(x), nil
	case "oct":
		return nil, errors.New("a symmetric key has no place in a published key set")
	}
	return nil, fmt.Errorf("unknown key type %q", r.Kty)
}
