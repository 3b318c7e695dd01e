package policy

import (
	"fmt"
	"slices"
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
// principals in turn, for n from 10,000 to 1,000,000 (past maxBuckets
// every call is a principal whose bucket was forgotten, so it forgets
// another), against the same with 1,000 principals, interleaved in
// chunks so that both see the same machine: the x1k metric is the median
// cost per call over the 1,000-principal case's in the same run.
func BenchmarkRateLimitPrincipals(b *testing.B) {
	now := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	limiter := func(n int) (*rateLimits, []string) {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint("user-", i)
		}
		l := newRateLimits()
		l.rules["t"] = rate{perSecond: 1, burst: 1e9}
		l.any.Store(true)
		for _, id := range ids { // the steady state: every principal seen
			l.take(id, "t", now)
		}
		return l, ids
	}
	// run makes k calls of l, going on from principal *i, and returns
	// how long they took.
	run := func(l *rateLimits, ids []string, i *int, k int) time.Duration {
		start := time.Now()
		for range k {
			l.take(ids[*i], "t", now)
			if *i++; *i == len(ids) {
				*i = 0
			}
		}
		return time.Since(start)
	}
	baseL, baseIDs := limiter(1000)
	for _, n := range []int{10000, 100000, 1000000} {
		l, ids := limiter(n)
		b.Run(fmt.Sprint("principals=", n), func(b *testing.B) {
			const chunk = 1000 // one round of the 1,000 principals
			var base, with []float64
			bi, wi := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += chunk {
				k := min(chunk, b.N-done)
				base = append(base, float64(run(baseL, baseIDs, &bi, k).Nanoseconds())/float64(k))
				with = append(with, float64(run(l, ids, &wi, k).Nanoseconds())/float64(k))
			}
			b.StopTimer()
			// Medians of the chunks: a chunk the machine took the core
			// from counts as one chunk, not as its time.
			slices.Sort(base)
			slices.Sort(with)
			pb, pw := base[len(base)/2], with[len(with)/2]
			b.ReportMetric(pw, "ns/op")
			b.ReportMetric(pb, "base-ns/op")
			b.ReportMetric(pw/pb, "x1k")
		})
	}
}
