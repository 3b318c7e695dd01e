package mcptool

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool/policy"
)

// WithElicitationApprover makes the client answer with ap the yes-or-no
// questions a server asks during a call (an elicitation whose requested
// form has no fields, or exactly one boolean field) when no one can be
// asked interactively: the client has no [WithElicitationHandler] and
// the call has no served client to relay the question to. It covers the
// questions of a server's task (input_required) and of a 2025-11-25
// session alike, and makes the client declare elicitation.
//
// ap gets an approval request as for a tool call: the principal of the
// call's context (policy.PrincipalFrom), the imported tool's name in
// this client's registry (empty for a session's question that names no
// task of a call), and as arguments {"question": the server's message,
// cut to 500 bytes}; its digest binds the three, and it expires after
// policy.DefaultApprovalTTL. Approved, the question is accepted (the
// boolean field true); refused, it is declined. An approver that cannot
// ask anyone (policy.ErrApprovalUnavailable) or fails, and any other
// question, leave it unanswered as without a handler: the server's task
// is cancelled and the call fails saying why. A host whose person
// answers in its own approvals UI gives an ap that asks there.
func WithElicitationApprover(ap policy.Approver) ClientOption {
	return func(c *clientConfig) { c.approver = ap }
}

type askingToolKey struct{}

// approveElicitation answers p with the client's approver.
func (c *Client) approveElicitation(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	field, ok := yesNoField(p.RequestedSchema)
	if !ok {
		return nil, fmt.Errorf("the question %q is not a yes-or-no one (a form with no fields or one boolean), which is all the approver (mcptool.WithElicitationApprover) answers", shortText(p.Message, 200))
	}
	msg := p.Message
	if len(msg) > maxSummaryBytes {
		msg = shortText(msg, maxSummaryBytes)
	}
	args, _ := json.Marshal(map[string]string{"question": msg})
	principal, _ := policy.PrincipalFrom(ctx)
	name, _ := ctx.Value(askingToolKey{}).(string)
	var id [12]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	sum := sha256.Sum256([]byte(principal.ID + "\x00" + name + "\x00" + string(args)))
	req := policy.ApprovalRequest{ID: hex.EncodeToString(id[:]), Principal: principal.ID, Tool: name, Args: args,
		Digest: hex.EncodeToString(sum[:]), Expires: time.Now().Add(policy.DefaultApprovalTTL)}
	yes, err := c.cfg.approver.Approve(ctx, req)
	switch {
	case errors.Is(err, policy.ErrApprovalUnavailable):
		return nil, fmt.Errorf("the approver could not ask anyone about the question %q: %w", shortText(p.Message, 200), err)
	case err != nil:
		return nil, fmt.Errorf("the approver failed on the question %q: %w", shortText(p.Message, 200), err)
	case !yes:
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content := map[string]any{}
	if field != "" {
		content[field] = true
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// yesNoField reports whether schema is a form with no fields (field "")
// or exactly one boolean field, and names that field.
func yesNoField(schema any) (field string, ok bool) {
	data, err := json.Marshal(schema)
	if err != nil {
		return "", false
	}
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if string(data) == "null" {
		return "", true
	}
	if json.Unmarshal(data, &s) != nil || (s.Type != "" && s.Type != "object") {
		return "", false
	}
	if len(s.Properties) == 0 {
		return "", true
	}
	if len(s.Properties) > 1 {
		return "", false
	}
	for k, v := range s.Properties {
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(v, &p) == nil && p.Type == "boolean" {
			return k, true
		}
	}
	return "", false
}
