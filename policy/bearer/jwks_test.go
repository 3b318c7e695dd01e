package bearer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

var b64u = base64.RawURLEncoding.EncodeToString

func edJWK(kid string, pub ed25519.PublicKey) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": b64u(pub)}
}

func rsaJWK(kid, alg string, pub *rsa.PublicKey) map[string]any {
	m := map[string]any{"kty": "RSA", "kid": kid, "n": b64u(pub.N.Bytes()), "e": b64u(big.NewInt(int64(pub.E)).Bytes())}
	if alg != "" {
		m["alg"] = alg
	}
	return m
}

func ecJWK(kid string, pub *ecdsa.PublicKey) map[string]any {
	b, err := pub.Bytes()
	if err != nil {
		panic(err)
	}
	n := (len(b) - 1) / 2
	return map[string]any{"kty": "EC", "crv": pub.Curve.Params().Name, "kid": kid, "x": b64u(b[1 : 1+n]), "y": b64u(b[1+n:])}
}

func keySet(keys ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// jwksServer serves whatever body holds, counting the requests.
type jwksServer struct {
	mu       sync.Mutex
	body     []byte
	status   int
	header   http.Header
	requests atomic.Int32
	notMod   atomic.Int32
}

func (s *jwksServer) set(body []byte) {
	s.mu.Lock()
	s.body, s.status = body, http.StatusOK
	s.mu.Unlock()
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.mu.Lock()
	body, status := s.body, s.status
	for k, v := range s.header {
		w.Header()[k] = v
	}
	s.mu.Unlock()
	if etag := w.Header().Get("ETag"); etag != "" && r.Header.Get("If-None-Match") == etag {
		s.notMod.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.WriteHeader(status)
	w.Write(body)
}

func jwksVerifier(src bearer.KeySource) *bearer.JWTVerifier {
	return &bearer.JWTVerifier{Source: src, Issuer: "https://issuer.test", Audience: "clawtool"}
}

func TestJWKSRotation(t *testing.T) {
	pubA, privA, _ := ed25519.GenerateKey(nil)
	pubB, privB, _ := ed25519.GenerateKey(nil)
	srv := &jwksServer{}
	srv.set(keySet(edJWK("a", pubA)))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	// MinRefresh of 1ns: every unknown kid may fetch, as rotation needs here.
	v := jwksVerifier(&bearer.JWKS{URL: hs.URL, MinRefresh: time.Nanosecond})
	ctx := context.Background()
	tokA := sign(t, claimsFor("ann", "viewer"), privA, jwt.SigningMethodEdDSA, "a")
	tokB := sign(t, claimsFor("bob", "viewer"), privB, jwt.SigningMethodEdDSA, "b")
	if p, err := v.VerifyToken(ctx, tokA); err != nil || p.ID != "ann" {
		t.Fatalf("key a: %v, %+v", err, p)
	}
	if _, err := v.VerifyToken(ctx, tokB); err == nil {
		t.Fatal("key b accepted before the server published it")
	}
	srv.set(keySet(edJWK("b", pubB))) // rotate: a retired, b new
	if p, err := v.VerifyToken(ctx, tokB); err != nil || p.ID != "bob" {
		t.Fatalf("key b after rotation: %v, %+v", err, p)
	}
	if _, err := v.VerifyToken(ctx, tokA); err == nil || !errors.Is(err, bearer.ErrInvalidToken) {
		t.Fatalf("retired key a: %v, want invalid token", err)
	}
}

func TestJWKSUnknownKidRateLimited(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	srv := &jwksServer{}
	srv.set(keySet(edJWK("a", pub)))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	src := &bearer.JWKS{URL: hs.URL} // MinRefresh: the default minute
	v := jwksVerifier(src)
	ctx := context.Background()
	// Tokens with made-up kids, concurrently, before and after the set is
	// known: one fetch in all.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			tok := sign(t, claimsFor("mallory"), priv, jwt.SigningMethodEdDSA, fmt.Sprintf("kid-%d", i))
			if _, err := v.VerifyToken(ctx, tok); err == nil {
				t.Errorf("made-up kid %d accepted", i)
			}
		})
	}
	wg.Wait()
	for i := range 200 {
		tok := sign(t, claimsFor("mallory"), priv, jwt.SigningMethodEdDSA, fmt.Sprintf("later-%d", i))
		if _, err := v.VerifyToken(ctx, tok); err == nil {
			t.Fatalf("made-up kid %d accepted", i)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d fetches for 250 tokens with unknown kids, want 1", n)
	}
	if _, err := v.VerifyToken(ctx, sign(t, claimsFor("ann"), priv, jwt.SigningMethodEdDSA, "a")); err != nil {
		t.Errorf("known kid: %v", err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d fetches after a known kid, want 1", n)
	}
}

func TestJWKSBadSetsKeepLastGood(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	tok := sign(t, claimsFor("ann"), priv, jwt.SigningMethodEdDSA, "a")
	good := keySet(edJWK("a", pub))
	huge := keySet(edJWK("a", pub), map[string]any{"kty": "OKP", "padding": strings.Repeat("x", 4096)})
	tests := []struct {
		name, want string
		body       []byte
		status     int
	}{
		{"oversized", "larger than 1024 bytes", huge, 200},
		{"malformed JSON", "not a JSON Web Key Set", []byte(`{"keys": [`), 200},
		{"no keys array", "no \"keys\" array", []byte(`{"key": []}`), 200},
		{"error status", "500", []byte(`oops`), 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &jwksServer{}
			srv.mu.Lock()
			srv.body, srv.status = tt.body, tt.status
			srv.mu.Unlock()
			hs := httptest.NewServer(srv)
			defer hs.Close()
			src := &bearer.JWKS{URL: hs.URL, MaxBytes: 1024, MinRefresh: time.Nanosecond}
			ctx := context.Background()
			// Without a good set, the key is refused with the reason.
			if _, err := src.Key(ctx, "a", "EdDSA"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("bad set first: %v, want %q", err, tt.want)
			}
			// A good set, then the bad one again: the good keys stay.
			srv.set(good)
			if _, err := jwksVerifier(src).VerifyToken(ctx, tok); err != nil {
				t.Fatalf("good set: %v", err)
			}
			srv.mu.Lock()
			srv.body, srv.status = tt.body, tt.status
			srv.mu.Unlock()
			before := srv.requests.Load()
			if _, err := src.Key(ctx, "rotated", "EdDSA"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("unknown kid against a bad set: %v, want %q", err, tt.want)
			}
			if srv.requests.Load() == before {
				t.Fatal("the unknown kid made no fetch")
			}
			if _, err := jwksVerifier(src).VerifyToken(ctx, tok); err != nil {
				t.Errorf("the last good set was dropped: %v", err)
			}
		})
	}
}

func TestJWKSSkipsUnusableKeys(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	offCurve := ecJWK("off", &ecKey.PublicKey)
	offCurve["y"] = b64u(make([]byte, 32))
	enc := edJWK("enc", pub)
	enc["use"] = "enc"
	srv := &jwksServer{}
	srv.set(keySet(
		edJWK("ed", pub), rsaJWK("rs", "RS256", &rsaKey.PublicKey), ecJWK("ec", &ecKey.PublicKey),
		map[string]any{"kty": "oct", "kid": "hmac", "k": b64u(hmacKey)},
		rsaJWK("small", "", &small.PublicKey), offCurve, enc, edJWK("ed", pub),
		map[string]any{"kty": "XYZ", "kid": "what"},
	))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	src := &bearer.JWKS{URL: hs.URL}
	v := jwksVerifier(src)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tok  string
		ok   bool
	}{
		{"ed25519", sign(t, claimsFor("ann"), priv, jwt.SigningMethodEdDSA, "ed"), true},
		{"rsa RS256", sign(t, claimsFor("ann"), rsaKey, jwt.SigningMethodRS256, "rs"), true},
		{"rsa key restricted to RS256, token PS256", sign(t, claimsFor("ann"), rsaKey, jwt.SigningMethodPS256, "rs"), false},
		{"ecdsa", sign(t, claimsFor("ann"), ecKey, jwt.SigningMethodES256, "ec"), true},
		{"hmac key from the set", sign(t, claimsFor("ann"), hmacKey, jwt.SigningMethodHS256, "hmac"), false},
		{"small rsa", sign(t, claimsFor("ann"), small, jwt.SigningMethodRS256, "small"), false},
	} {
		if _, err := v.VerifyToken(ctx, tc.tok); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	skipped := strings.Join(src.Skipped(), "\n")
	for _, want := range []string{`"hmac"`, "symmetric", `"small"`, "1024 bits", `"off"`, "not on curve", `"enc"`, `use "enc"`, "repeated", `unknown key type "XYZ"`} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped reasons lack %q:\n%s", want, skipped)
		}
	}
	if n := len(src.Skipped()); n != 6 {
		t.Errorf("%d keys skipped, want 6:\n%s", n, skipped)
	}
}

func TestJWKSServerDown(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	// A server that never answers: the caller's context bounds the wait.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	src := &bearer.JWKS{URL: hang.URL}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // ok-wallclock: gives up on the hung server
	defer cancel()
	if _, err := src.Key(ctx, "a", "EdDSA"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung server: %v, want the context's deadline", err)
	}

	// A server that is gone: the error says so at once, and the last good
	// set stays in force.
	srv := &jwksServer{}
	srv.set(keySet(edJWK("a", pub)))
	hs := httptest.NewServer(srv)
	src = &bearer.JWKS{URL: hs.URL, MinRefresh: time.Nanosecond}
	if _, err := src.Key(context.Background(), "a", "EdDSA"); err != nil {
		t.Fatal(err)
	}
	hs.Close()
	if _, err := src.Key(context.Background(), "b", "EdDSA"); err == nil || errors.Is(err, bearer.ErrUnknownKey) {
		t.Errorf("server gone: %v, want the fetch's error", err)
	}
	if _, err := src.Key(context.Background(), "a", "EdDSA"); err != nil {
		t.Errorf("the last good key after the server went away: %v", err)
	}
}

// handlerTransport serves requests in-process, so that a synctest bubble
// holds the whole exchange.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

func TestJWKSRefreshInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub, _, _ := ed25519.GenerateKey(nil)
		srv := &jwksServer{header: http.Header{}}
		srv.set(keySet(edJWK("a", pub)))
		src := &bearer.JWKS{URL: "https://jwks.test/keys", Client: &http.Client{Transport: handlerTransport{srv}}, Refresh: 10 * time.Minute}
		ctx := context.Background()
		get := func(kid string) error { _, err := src.Key(ctx, kid, "EdDSA"); return err }
		if err := get("a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Minute - time.Second)
		get("a")
		if n := srv.requests.Load(); n != 1 {
			t.Fatalf("%d fetches within the refresh interval, want 1", n)
		}
		time.Sleep(time.Second)
		get("a")
		if n := srv.requests.Load(); n != 2 {
			t.Fatalf("%d fetches once the interval passed, want 2", n)
		}

		// Cache-Control max-age shortens the interval; an ETag makes the
		// refresh a 304 that keeps the keys.
		srv.mu.Lock()
		srv.header.Set("Cache-Control", "public, max-age=120")
		srv.header.Set("ETag", `"v1"`)
		srv.mu.Unlock()
		time.Sleep(10 * time.Minute)
		get("a") // fetched with the new headers
		time.Sleep(119 * time.Second)
		get("a")
		if n := srv.requests.Load(); n != 3 {
			t.Fatalf("%d fetches within max-age, want 3", n)
		}
		time.Sleep(time.Second)
		if err := get("a"); err != nil {
			t.Fatalf("after a 304: %v", err)
		}
		if n, nm := srv.requests.Load(), srv.notMod.Load(); n != 4 || nm != 1 {
			t.Fatalf("%d fetches after max-age (%d not modified), want 4 (1)", n, nm)
		}
		// max-age below MinRefresh is raised to it.
		srv.mu.Lock()
		srv.header.Set("Cache-Control", "max-age=1")
		srv.header.Del("ETag")
		srv.mu.Unlock()
		time.Sleep(120 * time.Second)
		get("a")
		time.Sleep(30 * time.Second)
		get("a")
		if n := srv.requests.Load(); n != 5 {
			t.Fatalf("%d fetches, want 5: max-age=1 must not refetch within MinRefresh", n)
		}
		time.Sleep(30 * time.Second)
		get("a")
		if n := srv.requests.Load(); n != 6 {
			t.Fatalf("%d fetches, want 6", n)
		}
	})
}

// TestJWKSStaleKeyDuringRefresh: while a stale set is being refreshed,
// a known key is used at once rather than after the fetch.
func TestJWKSStaleKeyDuringRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub, _, _ := ed25519.GenerateKey(nil)
		srv := &jwksServer{}
		srv.set(keySet(edJWK("a", pub)))
		hold := make(chan struct{})
		var held atomic.Bool
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if held.Load() {
				<-hold
			}
			srv.ServeHTTP(w, r)
		})
		src := &bearer.JWKS{URL: "https://jwks.test/keys", Client: &http.Client{Transport: handlerTransport{slow}}, Refresh: time.Hour}
		ctx := context.Background()
		if _, err := src.Key(ctx, "a", "EdDSA"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		held.Store(true)
		refreshed := make(chan error)
		go func() { _, err := src.Key(ctx, "a", "EdDSA"); refreshed <- err }()
		synctest.Wait() // the refresh is under way, held by the server
		if _, err := src.Key(ctx, "a", "EdDSA"); err != nil {
			t.Errorf("stale key during the refresh: %v", err)
		}
		close(hold)
		if err := <-refreshed; err != nil {
			t.Error(err)
		}
		if n := srv.requests.Load(); n != 2 {
			t.Errorf("%d fetches, want 2", n)
		}
	})
}
