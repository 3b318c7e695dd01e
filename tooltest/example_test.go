package tooltest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/tooltest"
)

// shout is a hand-written tool: it upper-cases its text.
type shout struct{ name string }

func (s shout) Name() string        { return s.name }
func (s shout) Description() string { return "Upper-cases text." }

func (s shout) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`)
}

func (s shout) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, fmt.Errorf("arguments: %v", err)
	}
	return tool.Result{Output: strings.ToUpper(in.Text)}, nil
}

func ExampleTestTool() {
	valid := json.RawMessage(`{"text":"hi"}`)

	fmt.Println(tooltest.TestTool(shout{name: "shout"}, valid))

	// A name with a space is refused by every model API.
	fmt.Println(tooltest.TestTool(shout{name: "shout loud"}, valid))
	// Output:
	// <nil>
	// tooltest: name: Name() = "shout loud"; a tool name must match ^[a-zA-Z0-9_-]{1,64}$, the names every model API accepts
}
