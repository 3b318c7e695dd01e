package policy

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// maxBuckets bounds the rate-limit state: at most this many (principal,
// tool) pairs keep a bucket. Past it, the pair used least recently is
// forgotten (see [Authorizer.LimitRate]).
const maxBuckets = 100000

type rateLimits struct {
	any     atomic.Bool // some limit is set: the common case without limits takes no lock
	mu      sync.Mutex
	rules   map[string]rate // tool name or "*" → rate
	buckets map[[2]string]*bucket
	// lru links the buckets by last use: lru.next is the latest used,
	// lru.prev the least recently used.
	lru bucket
}

type rate struct {
	perSecond float64
	burst     float64
}

type bucket struct {
	key        [2]string // principal, tool
	tokens     float64
	last       time.Time
	prev, next *bucket
}

func newRateLimits() *rateLimits {
	l := &rateLimits{rules: map[string]rate{}, buckets: map[[2]string]*bucket{}}
	l.lru.prev, l.lru.next = &l.lru, &l.lru
	return l
}

// unlink takes b out of the lru list.
func (b *bucket) unlink() {
	b.prev.next, b.next.prev = b.next, b.prev
}

// front puts b at the front of l's lru list: the latest used.
func (l *rateLimits) front(b *bucket) {
	b.prev, b.next = &l.lru, l.lru.next
	l.lru.next.prev = b
	l.lru.next = b
}

// LimitRate limits each principal to perSecond calls of the named tool
// on average, with bursts of up to burst calls (a token bucket per
// principal and tool). The name "*" limits every tool that has no limit
// of its own. A call over the limit is refused with a message saying
// when to retry, and its result's Metadata["retry_after"] holds the wait
// as a time.Duration. A perSecond of zero or less removes the limit.
//
// The state is bounded: buckets are kept for at most 100,000 (principal,
// tool) pairs. When a pair beyond those calls, the pair used least
// recently is forgotten (in constant time), and its next call starts with
// a full bucket. A principal's calls, refused ones included, keep its
// bucket: it can be forgotten only after 100,000 other pairs have called
// since its latest call, and it then gains at most one burst — nothing
// at all when it has been idle long enough to refill, the usual case.
func (a *Authorizer) LimitRate(toolName string, perSecond float64, burst int) {
	l := a.limits
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() { l.any.Store(len(l.rules) > 0) }()
	if perSecond <= 0 {
		delete(l.rules, toolName)
		return
	}
	l.rules[toolName] = rate{perSecond: perSecond, burst: math.Max(1, float64(burst))}
}

// active reports whether some limit is set.
func (l *rateLimits) active() bool { return l.any.Load() }

// take spends a token of principal's bucket for toolName, or returns how
// long until one is available.
func (l *rateLimits) take(principal, toolName string, now time.Time) (time.Duration, bool) {
	if !l.any.Load() {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rules) == 0 {
		return 0, false
	}
	r, ok := l.rules[toolName]
	if !ok {
		if r, ok = l.rules["*"]; !ok {
			return 0, false
		}
	}
	key := [2]string{principal, toolName}
	b := l.buckets[key]
	switch {
	case b != nil:
		b.unlink()
	case len(l.buckets) >= maxBuckets:
		// Forget the least recently used pair, and reuse its bucket.
		b = l.lru.prev
		b.unlink()
		delete(l.buckets, b.key)
		*b = bucket{key: key, tokens: r.burst, last: now}
		l.buckets[key] = b
	default:
		b = &bucket{key: key, tokens: r.burst, last: now}
		l.buckets[key] = b
	}
	l.front(b)
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(r.burst, b.tokens+el*r.perSecond)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, false
	}
	wait := time.Duration((1 - b.tokens) / r.perSecond * float64(time.Second))
	return wait, true
}
