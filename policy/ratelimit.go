package policy

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// maxBuckets bounds the rate-limit state kept: past it, full buckets are
// dropped (a full bucket is the same as no bucket).
const maxBuckets = 100000

type rateLimits struct {
	any     atomic.Bool // some limit is set: the common case without limits takes no lock
	mu      sync.Mutex
	rules   map[string]rate // tool name or "*" → rate
	buckets map[[2]string]*bucket
}

type rate struct {
	perSecond float64
	burst     float64
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimits() *rateLimits {
	return &rateLimits{rules: map[string]rate{}, buckets: map[[2]string]*bucket{}}
}

// LimitRate limits each principal to perSecond calls of the named tool
// on average, with bursts of up to burst calls (a token bucket per
// principal and tool). The name "*" limits every tool that has no limit
// of its own. A call over the limit is refused with a message saying
// when to retry, and its result's Metadata["retry_after"] holds the wait
// as a time.Duration. A perSecond of zero or less removes the limit.
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
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.sweepLocked(now)
		}
		b = &bucket{tokens: r.burst, last: now}
		l.buckets[key] = b
	}
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

func (l *rateLimits) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		r, ok := l.rules[k[1]]
		if !ok {
			r = l.rules["*"]
		}
		if b.tokens+now.Sub(b.last).Seconds()*r.perSecond >= r.burst {
			delete(l.buckets, k)
		}
	}
}
