package interop

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/openaitool"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// roundTrip decodes ours into the SDK value v, encodes v again and
// requires the same JSON: nothing was lost or added on the way.
func roundTrip(t *testing.T, ours []byte, v any) {
	t.Helper()
	roundTripAs(t, ours, v, nil)
}

// roundTripAs is roundTrip where equivalent forms of ours are first
// rewritten by expand into the form the SDK writes.
func roundTripAs(t *testing.T, ours []byte, v any, expand func(any)) {
	t.Helper()
	if err := json.Unmarshal(ours, v); err != nil {
		t.Fatalf("decoding into %T: %v\n%s", v, err, ours)
	}
	back, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	var a, b any
	json.Unmarshal(ours, &a)
	json.Unmarshal(back, &b)
	if expand != nil {
		expand(a)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("%T does not keep our JSON (-ours +sdk):\n%s", v, diff)
	}
}

func TestOpenAIChatDefinitions(t *testing.T) {
	for _, mode := range []openaitool.StrictMode{openaitool.StrictOff, openaitool.StrictOn, openaitool.StrictAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			ts, err := openaitool.NewTools(sampleTools(), openaitool.WithStrict(mode))
			if err != nil {
				t.Fatal(err)
			}
			var defs []json.RawMessage
			json.Unmarshal(ts.Chat(), &defs)
			for i, d := range defs {
				var u openai.ChatCompletionToolUnionParam
				roundTrip(t, d, &u)
				fn := u.OfFunction
				if fn == nil {
					t.Fatalf("definition %d did not decode as a function tool: %s", i, d)
				}
				want := sampleTools()[i]
				if fn.Function.Name != want.Name() || fn.Function.Description.Value != want.Description() {
					t.Errorf("definition %d: name %q description %q", i, fn.Function.Name, fn.Function.Description.Value)
				}
				strict, _ := ts.Strict(want.Name())
				if fn.Function.Strict.Value != strict {
					t.Errorf("definition %d: strict = %v, want %v", i, fn.Function.Strict.Value, strict)
				}
				if fn.Function.Parameters["type"] != "object" {
					t.Errorf("definition %d: parameters %v", i, fn.Function.Parameters)
				}
			}
		})
	}
}

func TestOpenAIResponsesDefinitions(t *testing.T) {
	ts, err := openaitool.NewTools(sampleTools(), openaitool.WithStrict(openaitool.StrictOn))
	if err != nil {
		t.Fatal(err)
	}
	var defs []json.RawMessage
	json.Unmarshal(ts.Responses(), &defs)
	for i, d := range defs {
		var u responses.ToolUnionParam
		roundTrip(t, d, &u)
		fn := u.OfFunction
		if fn == nil || fn.Name != sampleTools()[i].Name() || !fn.Strict.Value {
			t.Errorf("definition %d decoded as %+v", i, fn)
		}
	}
}

func TestOpenAIResultMessages(t *testing.T) {
	for i, m := range openaitool.ChatResults(sampleOutcomes()) {
		b, _ := json.Marshal(m)
		var u openai.ChatCompletionMessageParamUnion
		roundTrip(t, b, &u)
		tm := u.OfTool
		if tm == nil {
			t.Fatalf("message %d did not decode as a tool message: %s", i, b)
		}
		if tm.ToolCallID != sampleOutcomes()[i].ID || tm.Content.OfString.Value != openaitool.ResultText(sampleOutcomes()[i].Result) {
			t.Errorf("message %d = %+v", i, tm)
		}
	}
	calls := []tool.Call{{ID: "call_1", Name: "weather", Args: json.RawMessage(`{"city":"Paris"}`)}}
	b, _ := json.Marshal(openaitool.AssistantMessage("", calls))
	var u openai.ChatCompletionMessageParamUnion
	roundTrip(t, b, &u)
	if u.OfAssistant == nil || len(u.OfAssistant.ToolCalls) != 1 || u.OfAssistant.ToolCalls[0].OfFunction.ID != "call_1" {
		t.Errorf("assistant message decoded as %+v", u.OfAssistant)
	}
	for i, it := range openaitool.ResponsesResults(sampleOutcomes()) {
		b, _ := json.Marshal(it)
		var p responses.ResponseInputItemFunctionCallOutputParam
		roundTrip(t, b, &p)
		if p.CallID.Value != sampleOutcomes()[i].ID || p.Output.OfString.Value != openaitool.ResultText(sampleOutcomes()[i].Result) {
			t.Errorf("item %d = %+v", i, p)
		}
		var u responses.ResponseInputItemUnionParam
		roundTrip(t, b, &u)
		if u.OfFunctionCallOutput == nil {
			t.Errorf("item %d is not a function_call_output for the SDK", i)
		}
	}
}

const chatCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1764400000,"model":"gpt-4.1-mini",
"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,
"tool_calls":[
 {"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
 {"id":"call_b","type":"function","function":{"name":"search_flights","arguments":"{\"from\":\"CDG\",\"to\":\"HND\",\"date\":\"2026-12-24\"}"}}]}}],
"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func TestOpenAIChatCallsFromSDKTypes(t *testing.T) {
	var cc openai.ChatCompletion
	if err := json.Unmarshal([]byte(chatCompletion), &cc); err != nil {
		t.Fatal(err)
	}
	// The SDK's own values, encoded again, are what we parse.
	for name, v := range map[string]any{"ChatCompletion": cc, "ChatCompletionMessage": cc.Choices[0].Message} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := openaitool.ChatCalls(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []tool.Call
		for _, tc := range cc.Choices[0].Message.ToolCalls {
			want = append(want, tool.Call{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
		}
		if diff := cmp.Diff(want, calls); diff != "" {
			t.Errorf("%s: calls differ from the SDK's reading (-sdk +ours):\n%s", name, diff)
		}
	}
}

const responsesResponse = `{"id":"resp_1","object":"response","created_at":1764400000,"status":"completed","model":"gpt-4.1",
"output":[
 {"type":"reasoning","id":"rs_1","summary":[]},
 {"type":"function_call","id":"fc_1","call_id":"call_1","name":"weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
 {"type":"function_call","id":"fc_2","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Lima\"}","status":"completed"}],
"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"temperature":1,"top_p":1,"error":null,"incomplete_details":null,"instructions":null,"metadata":{}}`

func TestOpenAIResponsesCallsFromSDKTypes(t *testing.T) {
	var r responses.Response
	if err := json.Unmarshal([]byte(responsesResponse), &r); err != nil {
		t.Fatal(err)
	}
	// Response unions do not survive json.Marshal; RawJSON is the SDK's
	// way to get a response's JSON, and what users pass us.
	calls, err := openaitool.ResponsesCalls([]byte(r.RawJSON()))
	if err != nil {
		t.Fatal(err)
	}
	var want []tool.Call
	for _, item := range r.Output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			want = append(want, tool.Call{ID: fc.CallID, Name: fc.Name, Args: json.RawMessage(fc.Arguments)})
		}
	}
	if len(want) != 2 {
		t.Fatalf("the SDK read %d function calls", len(want))
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls differ from the SDK's reading (-sdk +ours):\n%s", diff)
	}
}
