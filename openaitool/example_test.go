package openaitool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/openaitool"
)

// greet is a hand-written tool.
type greet struct{}

func (greet) Name() string        { return "greet" }
func (greet) Description() string { return "Greets someone." }
func (greet) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"punctuation":{"type":"string","default":"!"}},"required":["name"]}`)
}
func (greet) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Name, Punctuation string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: "Hello, " + in.Name + in.Punctuation}, nil
}

// Example shows the round trip: definitions out, the model's tool calls
// in, results back, with strict mode on.
func Example() {
	reg := tool.NewRegistry()
	if err := reg.Register(greet{}); err != nil {
		log.Fatal(err)
	}
	tools, err := openaitool.NewTools(reg.List(), openaitool.WithStrict(openaitool.StrictOn))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(tools.Chat()))

	// The model's reply (a Chat Completions response body): in strict mode
	// it sends null for the optional field.
	body := []byte(`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
		{"id":"call_1","type":"function","function":{"name":"greet","arguments":"{\"name\":\"Ada\",\"punctuation\":null}"}}]}}]}`)
	calls, err := openaitool.ChatCalls(body)
	if err != nil {
		log.Fatal(err)
	}
	calls = tools.Normalize(calls) // null → the default "!"

	var outcomes []tool.Outcome
	for _, c := range calls {
		outcomes = append(outcomes, tool.Outcome{ID: c.ID, Result: reg.Execute(context.Background(), c.Name, c.Args)})
	}
	msgs, _ := json.Marshal(openaitool.ChatResults(outcomes))
	fmt.Println(string(msgs))
	// Output:
	// [{"type":"function","function":{"name":"greet","description":"Greets someone.","parameters":{"type":"object","properties":{"name":{"type":"string"},"punctuation":{"type":["string","null"],"description":"Default: \"!\"."}},"required":["name","punctuation"],"additionalProperties":false},"strict":true}}]
	// [{"role":"tool","content":"Hello, Ada!","tool_call_id":"call_1"}]
}
