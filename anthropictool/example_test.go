package anthropictool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
)

type upper struct{}

func (upper) Name() string        { return "upper" }
func (upper) Description() string { return "Upper-cases text." }
func (upper) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
}
func (upper) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: fmt.Sprintf("%q", in.Text+"!")}, nil
}

// Example shows the round trip with the Messages API: definitions out,
// tool_use blocks in, one user message of tool_result blocks back. The
// second call has bad input, so its result is an error the model can act
// on.
func Example() {
	reg := tool.NewRegistry()
	if err := reg.Register(upper{}); err != nil {
		log.Fatal(err)
	}
	defs, err := anthropictool.Tools(reg.List())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(defs))

	body := []byte(`{"role":"assistant","stop_reason":"tool_use","content":[
		{"type":"tool_use","id":"toolu_1","name":"upper","input":{"text":"hi"}},
		{"type":"tool_use","id":"toolu_2","name":"upper","input":{"txt":"hi"}}]}`)
	calls, err := anthropictool.Calls(body)
	if err != nil {
		log.Fatal(err)
	}
	var outcomes []tool.Outcome
	for _, c := range calls {
		outcomes = append(outcomes, tool.Outcome{ID: c.ID, Result: reg.Execute(context.Background(), c.Name, c.Args)})
	}
	msg := anthropictool.Results(outcomes)
	fmt.Println(msg.Role, msg.Content[0].Content, msg.Content[1].IsError)
	// Output:
	// [{"name":"upper","description":"Upper-cases text.","input_schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]
	// user "hi!" true
}
