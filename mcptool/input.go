package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/miniopenclaw/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrInputRequired is what [RequestInput] returns once it has recorded a
// request: the tool returns it, and the call is answered with the input
// requests instead of a result.
var ErrInputRequired = errors.New("mcptool: the call needs input from the client")

// A MissingCapabilityError is what [RequestInput] returns when the client
// did not declare a capability the requests need. The tool returns it, and
// the call is answered with the protocol's MissingRequiredClientCapability
// error (-32021; HTTP status 400).
type MissingCapabilityError struct {
	// Missing names the capabilities, among "sampling", "elicitation" and
	// "roots", in that order.
	Missing []string
}

func (e *MissingCapabilityError) Error() string {
	noun := "capability"
	if len(e.Missing) > 1 {
		noun = "capabilities"
	}
	return fmt.Sprintf("mcptool: the client did not declare the %s %s this call needs", strings.Join(e.Missing, " and "), noun)
}

// inputSlot carries a call's input requests and responses between the
// server's handler and the tool, through the tool's context.
type inputSlot struct {
	ss        *mcp.ServerSession
	caps      *mcp.ClientCapabilities // when ss is nil: the request's own
	responses mcp.InputResponseMap
	state     string
	seal      func(state string) string // seals the state of a 2026-07-28 call's input requests

	mu       sync.Mutex
	over     bool                // the handler has answered the call
	requests mcp.InputRequestMap // set by RequestInput
	next     string              // state for the retry
	missing  *MissingCapabilityError
	kind     tool.ErrorKind // of the call's result, set by Server.execute
	approval string         // the approval request an ElicitApprover asked about
}

type inputKey struct{}

// RequestInput asks the client for input the tool needs to finish the
// call: a completion from the client's model (*mcp.CreateMessageParams),
// an answer from its user (*mcp.ElicitParams) or its roots
// (*mcp.ListRootsParams), under IDs the tool chooses. This is the
// protocol's multi round-trip request (SEP-2322): the tool returns the
// error RequestInput gives back, the client fulfills the requests and
// calls the tool again with the same arguments, and the second call finds
// the answers with [InputResponses] and state, an opaque string the tool
// chose to carry between the two calls, with [RequestState]. The client
// can read state (it is sealed, not encrypted), so it must not hold
// secrets; the answers are the client's to give, so the tool checks them
// as any input.
//
// A 2026-07-28 client does the round trip itself; for a 2025-11-25 client
// go-sdk sends the requests on the session and calls the tool again on the
// server. Either way the tool is written once.
//
// RequestInput returns [ErrInputRequired] after recording the requests,
// a [*MissingCapabilityError] when the client did not declare a
// capability they need, and an error saying so when ctx does not belong to
// a tools/call served by this package. When a tool calls it more than
// once, the last call counts: a tool told a capability is missing may ask
// for something else.
//
// In a 2026-07-28 call the client gets state sealed (see
// [WithInputRounds]): a retry whose state was changed, or belongs to
// another caller, tool or arguments, or expired, is refused with -32602
// before the tool runs, so the tool may trust the state it gets back to
// be one it gave for this call. It may still come more than once: a
// client may retry the same round again.
func RequestInput(ctx context.Context, requests mcp.InputRequestMap, state string) error {
	slot, _ := ctx.Value(inputKey{}).(*inputSlot)
	if slot == nil {
		return errors.New("mcptool: RequestInput outside a tools/call served by mcptool")
	}
	if len(requests) == 0 {
		return errors.New("mcptool: RequestInput with no requests")
	}
	missing := missingCapabilities(slot.ss, slot.caps, requests)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	switch {
	case slot.over:
		return errors.New("mcptool: RequestInput after the call was answered")
	case len(missing) > 0:
		slot.missing = &MissingCapabilityError{Missing: missing}
		return slot.missing
	}
	// The last call counts: a tool that learned a capability is missing
	// may ask for something else instead.
	slot.requests, slot.next, slot.missing = requests, state, nil
	return ErrInputRequired
}

// InputResponses returns the client's answers to the requests a previous
// call made with [RequestInput], by the IDs it gave them, or nil on a
// first call. An answer is an *mcp.CreateMessageWithToolsResult (or
// *mcp.CreateMessageResult), an *mcp.ElicitResult or an
// *mcp.ListRootsResult.
func InputResponses(ctx context.Context) mcp.InputResponseMap {
	if slot, _ := ctx.Value(inputKey{}).(*inputSlot); slot != nil {
		return slot.responses
	}
	return nil
}

// RequestState returns the state a previous call passed to
// [RequestInput], as the client sent it back, or "".
func RequestState(ctx context.Context) string {
	if slot, _ := ctx.Value(inputKey{}).(*inputSlot); slot != nil {
		return slot.state
	}
	return ""
}

// missingCapabilities lists the capabilities requests need that the
// client of ss (or, without a session, caps) did not declare.
func missingCapabilities(ss *mcp.ServerSession, caps *mcp.ClientCapabilities, requests mcp.InputRequestMap) []string {
	if ss != nil {
		if p := ss.InitializeParams(); p != nil {
			caps = p.Capabilities
		}
	}
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	var sampling, elicitation, roots bool
	for _, r := range requests {
		switch r.(type) {
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			sampling = caps.Sampling == nil
		case *mcp.ElicitParams:
			elicitation = caps.Elicitation == nil
		case *mcp.ListRootsParams:
			roots = caps.RootsV2 == nil
		}
	}
	var missing []string
	for _, m := range []struct {
		name    string
		missing bool
	}{{"sampling", sampling}, {"elicitation", elicitation}, {"roots", roots}} {
		if m.missing {
			missing = append(missing, m.name)
		}
	}
	return missing
}

// answer turns what a tool recorded with RequestInput into the answer
// to its tools/call, or returns nil, nil when it recorded nothing. Later
// calls of RequestInput fail.
func (slot *inputSlot) answer() (*mcp.CallToolResult, error) {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	slot.over = true
	switch {
	case slot.missing != nil:
		// Written by hand: mcp.ClientCapabilities always marshals roots.
		required := map[string]struct{}{}
		for _, m := range slot.missing.Missing {
			required[m] = struct{}{}
		}
		data, err := json.Marshal(map[string]any{"requiredCapabilities": required})
		if err != nil {
			return nil, err
		}
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: slot.missing.Error(), Data: data}
	case slot.requests != nil:
		state := slot.next
		if slot.seal != nil {
			state = slot.seal(state)
		}
		return &mcp.CallToolResult{InputRequests: slot.requests, RequestState: state}, nil
	}
	return nil, nil
}
