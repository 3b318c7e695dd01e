package tool

import "fmt"

// entryFor is newEntry with the checks that depend on the
// registry's limits: the defaults of a tool's schema must fit in the
// argument cap, since they are added to the arguments of every call that
// leaves their properties out.
func (r *Registry) entryFor(t Tool) (*entry, error) {
	e, err := newEntry(t)
	if err != nil {
		return nil, err
	}
	n := 0
	switch {
	case e.check != nil:
		n = e.check.DefaultBytes()
	default:
		inner := t
		for {
			u, ok := inner.(interface{ unwrapTool() Tool })
			if !ok {
				break
			}
			inner = u.unwrapTool()
		}
		if d, ok := inner.(interface{ defaultBytes() int }); ok {
			n = d.defaultBytes()
		}
	}
	if limit := r.cfg.limits.maxBytes; n > limit {
		return nil, fmt.Errorf("register %q: %w: the schema's defaults total %d bytes of JSON, more than the %d-byte argument limit they are added under; shorten them or raise the limit (WithArgumentLimits)",
			e.name, ErrInvalidSchema, n, limit)
	}
	return e, nil
}
