package natstool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func openNonces(t *testing.T, nc *nats.Conn, o *natstool.NoncesOptions) *natstool.Nonces {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := natstool.OpenNonces(ctx, nc, o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNoncesClaim: a nonce is taken once across every handle on the
// bucket; what is not a plain token, or must be kept longer than the
// bucket keeps nonces, is refused before the bucket is asked.
func TestNoncesClaim(t *testing.T) {
	s := startServer(t, true)
	a := openNonces(t, connect(t, s), nil)
	b := openNonces(t, connect(t, s), nil)
	now := time.Now()
	expires := now.Add(policy.DefaultSignatureMaxAge)
	for _, tc := range []struct {
		name    string
		store   *natstool.Nonces
		nonce   string
		expires time.Time
		want    string // "" for taken
		used    bool   // the error wraps policy.ErrNonceUsed
	}{
		{"first use", a, "AAAAAAAAAAAAAAAAAAAAAA", expires, "", false},
		{"again, same handle", a, "AAAAAAAAAAAAAAAAAAAAAA", expires, "already used", true},
		{"again, another connection", b, "AAAAAAAAAAAAAAAAAAAAAA", expires, "already used", true},
		{"another nonce", b, "BBBBBBBBBBBBBBBBBBBBB-", expires, "", false},
		{"empty", a, "", expires, "not 1 to 64", false},
		{"a dot (a key hierarchy)", a, "AAAA.BBBB", expires, "not 1 to 64", false},
		{"a wildcard", a, "AAAA*", expires, "not 1 to 64", false},
		{"a space", a, "AAAA BBBB", expires, "not 1 to 64", false},
		{"too long", a, strings.Repeat("A", 65), expires, "not 1 to 64", false},
		{"kept longer than the bucket's TTL", a, "CCCCCCCCCCCCCCCCCCCCCC", now.Add(natstool.DefaultNoncesTTL + time.Second), "less than this signature needs", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.store.Claim(context.Background(), tc.nonce, tc.expires, now)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, policy.ErrNonceUsed) != tc.used {
				t.Fatalf("err = %v, want %q (ErrNonceUsed: %v)", err, tc.want, tc.used)
			}
		})
	}
}

// TestNoncesRace: workers racing to take one nonce: exactly one wins.
func TestNoncesRace(t *testing.T) {
	s := startServer(t, true)
	const racers = 8
	stores := make([]*natstool.Nonces, racers)
	for i := range stores {
		stores[i] = openNonces(t, connect(t, s), nil)
	}
	now := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			errs[i] = stores[i].Claim(context.Background(), "racedracedracedracedXY", now.Add(time.Minute), now)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, policy.ErrNonceUsed):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racers took the nonce, want 1", won)
	}
}

// TestNoncesFailClosed: a bucket that cannot record a nonce (full, or
// out of reach) refuses the call, and never as if the nonce were fresh.
func TestNoncesFailClosed(t *testing.T) {
	t.Run("full", func(t *testing.T) {
		s := startServer(t, true)
		n := openNonces(t, connect(t, s), &natstool.NoncesOptions{Bucket: "small", MaxBytes: 2048})
		now := time.Now()
		var err error
		taken := 0
		for i := 0; i < 100 && err == nil; i++ {
			if err = n.Claim(context.Background(), fmt.Sprintf("nonce%017d", i), now.Add(time.Minute), now); err == nil {
				taken++
			}
		}
		if err == nil || errors.Is(err, policy.ErrNonceUsed) || taken == 0 {
			t.Fatalf("after %d nonces: %v, want a full bucket's error", taken, err)
		}
		t.Logf("a 2 KiB bucket took %d nonces (about %d bytes each)", taken, 2048/taken)
	})
	t.Run("out of reach", func(t *testing.T) {
		s := startServer(t, true)
		nc := connect(t, s)
		n := openNonces(t, nc, &natstool.NoncesOptions{Timeout: 2 * time.Second})
		nc.Close()
		now := time.Now()
		if err := n.Claim(context.Background(), "DDDDDDDDDDDDDDDDDDDDDD", now.Add(time.Minute), now); err == nil || errors.Is(err, policy.ErrNonceUsed) || !strings.Contains(err.Error(), "cannot be recorded") {
			t.Fatalf("err = %v, want the bucket's failure", err)
		}
	})
	t.Run("no JetStream", func(t *testing.T) {
		s := startServer(t, false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := natstool.OpenNonces(ctx, connect(t, s), nil); err == nil {
			t.Fatal("opened a bucket on a server without JetStream")
		}
	})
}

// TestOpenNoncesTTL: opening an existing bucket makes its TTL longer,
// never shorter.
func TestOpenNoncesTTL(t *testing.T) {
	s := startServer(t, true)
	nc := connect(t, s)
	ttl := func() time.Duration {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(context.Background(), natstool.DefaultNonceBucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.TTL()
	}
	for _, tc := range []struct {
		open, want time.Duration
	}{
		{time.Minute * 3, time.Minute * 3},
		{time.Minute * 10, time.Minute * 10},
		{time.Minute * 4, time.Minute * 10},
	} {
		openNonces(t, nc, &natstool.NoncesOptions{TTL: tc.open})
		if got := ttl(); got != tc.want {
			t.Fatalf("opened with %s: the bucket keeps nonces %s, want %s", tc.open, got, tc.want)
		}
	}
}
