package policy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/miniopenclaw/tool"
)

// An Explanation is what [Authorizer.Explain] found for one call.
type Explanation struct {
	// Decision is the decision the policies make for the call.
	Decision Decision
	// Args are the call's arguments as the tool would receive them:
	// parsed strictly, validated, defaults applied, paths resolved by a
	// tool that resolves them ([tool.WithResolve]).
	Args json.RawMessage
}

// capture is the Authorizer of the registry Explain checks arguments
// with: it keeps the checked arguments and refuses the call, so that the
// tool never runs.
type capture struct{ args *json.RawMessage }

func (c capture) Authorize(_ context.Context, req tool.AccessRequest) error {
	*c.args = slices.Clone(req.Args)
	return errors.New("explained, not run")
}

// Explain returns the decision a makes for a call of t with args, and the
// arguments it decided on, without running t and without recording the
// decision (no audit record, no log line, no approval request, no rate
// limit spent). The arguments are checked as a registry checks them
// before it asks its Authorizer; an error is the refusal a registry would
// give them before any decision, and then nothing is decided.
func (a *Authorizer) Explain(ctx context.Context, t tool.Tool, args json.RawMessage) (Explanation, error) {
	var checked json.RawMessage
	probe := tool.NewRegistry(tool.WithAuthorizer(capture{&checked}))
	if err := probe.Register(t); err != nil {
		return Explanation{}, err
	}
	if res := probe.Execute(ctx, t.Name(), args); res.Kind != tool.KindDenied {
		return Explanation{}, errors.New(res.Error)
	}
	d := a.Decide(ctx, tool.AccessRequest{Tool: t, Name: t.Name(), Options: tool.OptionsOf(t), Args: checked})
	return Explanation{Decision: d, Args: checked}, nil
}
