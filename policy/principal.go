package policy

import (
	"context"
	"slices"
	"sync"

	"github.com/cedar-policy/cedar-go"
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
	// are JSON-like: string, bool, integers, float64 (as decimal when it
	// has at most four decimal places), []any, map[string]any.
	Attrs map[string]any
}

type principalKey struct{}

// WithPrincipal returns a context that carries p: calls made with it are
// decided for p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	p.Roles = slices.Clone(p.Roles)
	return context.WithValue(ctx, principalKey{}, &carried{p: p})
}

// carried is the principal a context carries, with its Cedar entity
// built once, on first use.
type carried struct {
	p      Principal
	once   sync.Once
	entity cedar.Entity
}

func (c *carried) userEntity() cedar.Entity {
	c.once.Do(func() { c.entity = userEntity(c.p) })
	return c.entity
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
