package geminitool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/geminitool"
)

type add struct{}

func (add) Name() string        { return "add" }
func (add) Description() string { return "Adds two integers." }
func (add) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":["integer","null"]}},"required":["a"]}`)
}
func (add) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ A, B int }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: fmt.Sprint(in.A + in.B)}, nil
}

// Example shows the round trip with Gemini: declarations in its schema
// dialect, functionCall parts in (without ids, so they get stable ones),
// functionResponse parts back.
func Example() {
	reg := tool.NewRegistry()
	if err := reg.Register(add{}); err != nil {
		log.Fatal(err)
	}
	defs, err := geminitool.Tools(reg.List())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(defs))

	body := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"add","args":{"a":2,"b":3}}}]}}]}`)
	calls, err := geminitool.Calls(body)
	if err != nil {
		log.Fatal(err)
	}
	var outcomes []tool.Outcome
	for _, c := range calls {
		outcomes = append(outcomes, tool.Outcome{ID: c.ID, Result: reg.Execute(context.Background(), c.Name, c.Args)})
	}
	out, _ := json.Marshal(geminitool.Results(calls, outcomes))
	fmt.Println(string(out))
	// Output:
	// [{"functionDeclarations":[{"name":"add","description":"Adds two integers.","parameters":{"type":"OBJECT","properties":{"a":{"type":"INTEGER"},"b":{"type":"INTEGER","nullable":true}},"required":["a"],"propertyOrdering":["a","b"]}}]}]
	// {"role":"user","parts":[{"functionResponse":{"name":"add","response":{"output":"5"}}}]}
}
