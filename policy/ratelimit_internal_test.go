package policy

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestRateLimitEvictionBound checks what forgetting a bucket can give a
// principal: the state holds at most maxBuckets (principal, tool) pairs;
// a principal over its limit stays over it while fewer than maxBuckets
// other pairs have called since its last call (its own refused calls
// count as calls); once that many have, its bucket may be forgotten, and
// it gets at most one burst back, no more. Time is synctest's.
func TestRateLimitEvictionBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newRateLimits()
		l.rules["t"] = rate{perSecond: 1, burst: 3}
		l.any.Store(true)
		allowed := func(p string) int { // calls p makes before it is refused
			n := 0
			for ; n < 100; n++ {
				if _, limited := l.take(p, "t", time.Now()); limited {
					return n
				}
			}
			return n
		}
		if n := allowed("p"); n != 3 {
			t.Fatalf("a fresh principal made %d calls, want the burst, 3", n)
		}
		// maxBuckets-1 other pairs: p's bucket is still kept, p still
		// limited; its refused call counts as its latest use.
		for i := range maxBuckets - 1 {
			l.take(fmt.Sprint("q", i), "t", time.Now())
		}
		if n := allowed("p"); n != 0 {
			t.Fatalf("p made %d calls after %d other pairs, want 0", n, maxBuckets-1)
		}
		for i := range maxBuckets - 1 {
			l.take(fmt.Sprint("r", i), "t", time.Now())
			if len(l.buckets) > maxBuckets {
				t.Fatalf("%d buckets kept, the bound is %d", len(l.buckets), maxBuckets)
			}
		}
		if n := allowed("p"); n != 0 {
			t.Fatalf("p made %d calls: its bucket was dropped though it called since", n)
		}
		// maxBuckets other pairs after p's latest call: p may be
		// forgotten, and gets one burst back, at most.
		for i := range maxBuckets {
			l.take(fmt.Sprint("s", i), "t", time.Now())
		}
		if n := allowed("p"); n > 3 {
			t.Fatalf("p made %d calls after being forgotten, want at most the burst, 3", n)
		}
		if n := allowed("p"); n != 0 {
			t.Fatalf("p made %d more calls", n)
		}
		// A bucket full again by the time it is forgotten gives nothing:
		// p waits out its refill, is forgotten, and makes the burst it
		// would have made anyway.
		time.Sleep(3 * time.Second)
		for i := range maxBuckets {
			l.take(fmt.Sprint("u", i), "t", time.Now())
		}
		if n := allowed("p"); n != 3 {
			t.Fatalf("p made %d calls after its refill, want 3", n)
		}
		// And the wait the refusal gives is the bucket's own.
		wait, limited := l.take("p", "t", time.Now())
		if !limited || wait != time.Second {
			t.Errorf("over the limit: wait %v, limited %v; want 1s", wait, limited)
		}
		if len(l.buckets) > maxBuckets {
			t.Errorf("%d buckets kept, the bound is %d", len(l.buckets), maxBuckets)
		}
	})
}

// BenchmarkRateLimitPrincipals measures a limited call by one of n
// principals in turn, from 1,000 to 1,000,000: past maxBuckets every call
// is a principal whose bucket was forgotten, so it forgets another. The
// x1k metric is the cost per call over the 1,000-principal case's in the
// same run.
func BenchmarkRateLimitPrincipals(b *testing.B) {
	var base float64
	for _, n := range []int{1000, 10000, 100000, 1000000} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint("user-", i)
		}
		b.Run(fmt.Sprint("principals=", n), func(b *testing.B) {
			l := newRateLimits()
			l.rules["t"] = rate{perSecond: 1, burst: 1e9}
			l.any.Store(true)
			now := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
			for _, id := range ids { // the steady state: every principal seen
				l.take(id, "t", now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				l.take(ids[i], "t", now)
				if i++; i == n {
					i = 0
				}
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if n == 1000 {
				base = per
			} else if base > 0 {
				b.ReportMetric(per/base, "x1k")
			}
		})
	}
}
