package policy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cedar-policy/cedar-go"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// A Principal is who a call is made for: a user, the roles it holds, and
// attributes a policy may test (a tenant, a team). The host sets it on the
// context with [WithPrincipal]; transports set it from what they verified.
type Principal struct {
	// ID identifies the user. In Cedar it is the entity User::"ID".
	ID string
	// Roles are the user's roles or groups. In Cedar each is a parent
	// entity Role::"name" of the user, so that a policy may say
	// principal in Role::"admin"; roles inherit from the roles given with
	// [WithRoleParents].
	Roles []string
	// Attrs are the user's attributes, principal.<name> in Cedar. Values
	// are JSON-like: string, bool, int, int64, json.Number, float64 (a
	// whole number in 64 bits as a Long, else a decimal when it has at
	// most four decimal places), []string, []any, map[string]any, and nil
	// (absent). A principal any of whose attributes holds another value
	// (another Go type, a number Cedar cannot hold, a value nested past
	// 64 levels) is refused every call and listed no tool: left out, the
	// value would read as absent, and a forbid guarded by has would not
	// apply.
	Attrs map[string]any
}

type principalKey struct{}

// WithPrincipal returns a context that carries p: calls made with it are
// decided for p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	p.Roles = slices.Clone(p.Roles)
	return context.WithValue(ctx, principalKey{}, &carried{p: p, ok: true})
}

// carried is the principal a context carries, with its Cedar entity
// and its cache key built once, on first use. The anonymous principal is
// a carried with ok false.
type carried struct {
	p      Principal
	ok     bool
	once   sync.Once
	entity cedar.Entity
	key    [sha256.Size]byte
	// last is the verdict of the principal's latest call, which
	// Authorizer.verdict checks before its cache.
	last atomic.Pointer[verdict]
	// plan is the principal's plan its latest listing used, which
	// carried.planFor checks before the generation's plans.
	plan atomic.Pointer[plan]
	// refused, when not nil, is the verdict on every call of a
	// principal an attribute of which the policies cannot read (see
	// residual.Unmodelled).
	refused *verdict
}

func (c *carried) build() {
	c.once.Do(func() {
		if c.ok {
			c.entity = userEntity(c.p)
			if path, typ := residual.Unmodelled(c.p.Attrs); path != "" {
				c.refused = &verdict{static: true, effect: Deny,
					reason: fmt.Sprintf("the call was refused: the caller's attribute %q holds a value the policies cannot read (%s)", path, typ)}
			}
		} else {
			c.entity = anonymous
		}
		c.key = principalCacheKey(c.p, c.ok, c.entity)
	})
}

func (c *carried) userEntity() cedar.Entity {
	c.build()
	return c.entity
}

func (c *carried) cacheKey() [sha256.Size]byte {
	c.build()
	return c.key
}

var anonymousCarried = &carried{}

// subject returns the principal ctx carries, or else a's default
// principal, the anonymous one unless [WithDefaultPrincipal] set one.
func (a *Authorizer) subject(ctx context.Context) *carried {
	if c, ok := ctx.Value(principalKey{}).(*carried); ok {
		return c
	}
	return a.fallback
}

// PrincipalFrom returns the principal ctx carries, and whether it carries
// one. A call whose context carries none is decided for the anonymous
// principal, the Cedar entity Anonymous::"", which no policy scoped to
// User or Role entities matches.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	c, ok := ctx.Value(principalKey{}).(*carried)
	if !ok {
		return Principal{}, false
	}
	return c.p, true
}

// WithoutPrincipal returns a context that carries no principal, whatever
// ctx carries: calls made with it are decided for the anonymous principal
// (or for the Authorizer's default principal, when [WithDefaultPrincipal]
// set one), and [PrincipalFrom] reports none. A transport whose connection outlives
// the request that opened it (an MCP session) gives the connection such a
// context, so that each later request is decided for its own credentials
// and never for the first request's.
func WithoutPrincipal(ctx context.Context) context.Context {
	return context.WithValue(ctx, principalKey{}, nil)
}
