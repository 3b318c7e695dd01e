package bearer_test

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestJWKSSkippedBounded: a key set of 1 MiB holds some 300,000 empty
// entries, each skipped with its reason: Skipped() kept and Logger wrote
// one line for each, on every fetch (the attack before the fix: 100,000
// reasons and log lines for a 0.3 MiB set). The reasons kept and logged
// are now bounded, the last saying how many more were skipped; the usable
// key of the set is still used (the control).
func TestJWKSSkippedBounded(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	body := keySet(edJWK("ed", pub))
	body = []byte(strings.Replace(string(body), `{"keys":[`, `{"keys":[`+strings.Repeat(`{},`, 100_000), 1))
	srv := &jwksServer{}
	srv.set(body)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var logged strings.Builder
	src := &bearer.JWKS{URL: hs.URL, MaxBytes: 2 << 20, Logger: testLogger(&logged)}
	if _, err := jwksVerifier(src).VerifyToken(context.Background(), sign(t, claimsFor("ann"), priv, jwt.SigningMethodEdDSA, "ed")); err != nil {
		t.Fatalf("control: the set's usable key: %v", err)
	}
	skipped := src.Skipped()
	if len(skipped) > 201 {
		t.Fatalf("%d skip reasons kept, want at most 201", len(skipped))
	}
	if last := skipped[len(skipped)-1]; !strings.Contains(last, "more") || !strings.Contains(last, "99800") {
		t.Errorf("the last reason %q does not say how many more were skipped", last)
	}
	if n := strings.Count(logged.String(), "\n"); n > 202 {
		t.Errorf("%d lines logged, want at most 202", n)
	}
}

// testLogger logs text lines to w.
func testLogger(w *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{w: w}, nil))
}

// lockedWriter serialises writes to a strings.Builder.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
