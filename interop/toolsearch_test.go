package interop

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
	"github.com/miniopenclaw/tool/openaitool"
	"github.com/miniopenclaw/tool/toolsearch"
	"github.com/openai/openai-go/v3/responses"
)

func emptyRegistry(t *testing.T) *tool.Registry {
	t.Helper()
	return tool.NewRegistry()
}

func deferWeather(name string) bool { return name == "weather" }

func TestAnthropicDeferredDefinitions(t *testing.T) {
	params, err := anthropictool.DeferredToolParams(sampleTools(), deferWeather)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		b, _ := json.Marshal(p)
		var tp anthropic.ToolParam
		roundTrip(t, b, &tp)
		if tp.DeferLoading.Value != (p.Name == "weather") {
			t.Errorf("%s: defer_loading decoded as %v", p.Name, tp.DeferLoading)
		}
	}
	for _, typ := range []string{anthropictool.ToolSearchRegex, anthropictool.ToolSearchBM25} {
		b, _ := json.Marshal(anthropictool.ServerSearchTool(typ))
		var u anthropic.ToolUnionParam
		roundTrip(t, b, &u)
		switch typ {
		case anthropictool.ToolSearchRegex:
			if u.OfToolSearchToolRegex20251119 == nil {
				t.Errorf("%s is not the SDK's regex tool search: %s", typ, b)
			}
		case anthropictool.ToolSearchBM25:
			if u.OfToolSearchToolBm25_20251119 == nil {
				t.Errorf("%s is not the SDK's BM25 tool search: %s", typ, b)
			}
		}
	}
}

func TestAnthropicToolReferences(t *testing.T) {
	blk := anthropictool.ToolReferences("toolu_1", []string{"weather", "search_flights"})
	b, _ := json.Marshal(anthropictool.Message{Role: "user", Content: []anthropictool.ContentBlock{blk}})
	var mp anthropic.MessageParam
	roundTrip(t, b, &mp)
	tr := mp.OfUser.Content[0].OfToolResult
	if tr == nil || tr.ToolUseID != "toolu_1" || len(tr.Content) != 2 {
		t.Fatalf("decoded as %+v", mp)
	}
	var got []string
	for _, c := range tr.Content {
		if c.OfToolReference == nil {
			t.Fatalf("content block is not a tool_reference: %+v", c)
		}
		got = append(got, c.OfToolReference.ToolName)
	}
	if !slices.Equal(got, []string{"weather", "search_flights"}) {
		t.Errorf("references = %q", got)
	}
}

func TestOpenAIResponsesToolSearch(t *testing.T) {
	ts, err := openaitool.NewTools(sampleTools())
	if err != nil {
		t.Fatal(err)
	}
	search := openaitool.ClientToolSearch(toolsearch.NewTool(toolsearch.New(emptyRegistry(t)), nil))
	var defs []json.RawMessage
	json.Unmarshal(ts.ResponsesDeferred(deferWeather, search), &defs)
	if len(defs) != len(sampleTools())+1 {
		t.Fatalf("%d definitions", len(defs))
	}
	for i, d := range defs {
		var u responses.ToolUnionParam
		roundTrip(t, d, &u)
		if i == len(defs)-1 {
			if u.OfToolSearch == nil || u.OfToolSearch.Execution != responses.ToolSearchToolExecutionClient || u.OfToolSearch.Parameters == nil {
				t.Errorf("last tool is not a client tool search: %s", d)
			}
			continue
		}
		if u.OfFunction == nil || u.OfFunction.DeferLoading.Value != (u.OfFunction.Name == "weather") {
			t.Errorf("tool %d decoded as %s", i, d)
		}
	}

	// The model's search comes as a tool_search_call output item.
	resp := []byte(`{"id":"resp_1","object":"response","created_at":1764560000,"status":"completed","model":"gpt-5.4","output":[
		{"type":"tool_search_call","id":"tsc_1","call_id":"call_s1","execution":"client","status":"completed","arguments":{"query":"weather in a city"}},
		{"type":"tool_search_call","id":"tsc_2","call_id":"call_s2","execution":"server","status":"completed","arguments":{"query":"flights"}}]}`)
	var r responses.Response
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Output[0].AsToolSearchCall(); c.CallID != "call_s1" || c.Execution != responses.ResponseToolSearchCallExecutionClient {
		t.Fatalf("SDK reads the call as %+v", c)
	}
	calls, err := openaitool.ToolSearchCalls(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].ID != "call_s1" || string(calls[0].Args) != `{"query":"weather in a city"}` {
		t.Fatalf("calls = %+v, want the client call only", calls)
	}

	// The answer goes back as a tool_search_output input item.
	item, err := openaitool.ToolSearchOutput("call_s1", sampleTools()[2:])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(item)
	var in responses.ResponseInputItemUnionParam
	roundTrip(t, b, &in)
	out := in.OfToolSearchOutput
	if out == nil || out.CallID.Value != "call_s1" || len(out.Tools) != 1 || out.Tools[0].OfFunction == nil || out.Tools[0].OfFunction.Name != "weather" {
		t.Errorf("decoded as %s", b)
	}
}
