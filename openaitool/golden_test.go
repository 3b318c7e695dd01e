package openaitool

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/miniopenclaw/tool/internal/golden"
)

// testTools are hand-written tools with schemas as a user or an MCP server
// would write them.
func testTools() []tool.Tool {
	return []tool.Tool{
		echotool.New("search_flights", "Searches flights between two airports.", `{
			"type":"object",
			"properties":{
				"from":{"type":"string","pattern":"^[A-Z]{3}$","description":"IATA code of the departure airport."},
				"to":{"type":"string","pattern":"^[A-Z]{3}$"},
				"date":{"type":"string","format":"date"},
				"passengers":{"type":"integer","minimum":1,"maximum":9,"default":1},
				"cabin":{"type":"string","enum":["economy","business","first"]},
				"flexible":{"type":"boolean"},
				"max_price":{"type":"number"},
				"airlines":{"type":"array","items":{"type":"string"}}
			},
			"required":["from","to","date"],
			"additionalProperties":false}`),
		echotool.New("weather", "Current weather in a city.", `{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"]}`),
	}
}

func rawJSON(b []byte) json.RawMessage { return json.RawMessage(b) }

func TestGoldenDefinitions(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode StrictMode
		api  string
	}{
		{"definitions_chat", StrictOff, "chat"},
		{"definitions_chat_strict", StrictOn, "chat"},
		{"definitions_chat_auto", StrictAuto, "chat"},
		{"definitions_responses", StrictOff, "responses"},
		{"definitions_responses_strict", StrictOn, "responses"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := NewTools(testTools(), WithStrict(tt.mode))
			if err != nil {
				t.Fatal(err)
			}
			out := ts.Chat()
			if tt.api == "responses" {
				out = ts.Responses()
			}
			golden.JSON(t, tt.name, rawJSON(out))
		})
	}
}

// The Chat definitions with strict off are exactly the registry's own.
func TestChatMatchesRegistryDefinitions(t *testing.T) {
	r := tool.NewRegistry()
	for _, tl := range testTools() {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ChatTools(r.List())
	if err != nil {
		t.Fatal(err)
	}
	if want := r.Definitions(); !bytes.Equal(got, want) {
		t.Errorf("ChatTools =\n%s\nRegistry.Definitions =\n%s", got, want)
	}
}

// callsCase is a response body and what became of its calls.
type callsCase struct {
	Calls    []callJSON    `json:"calls"`
	Outcomes []outcomeJSON `json:"outcomes"`
}

type callJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// outcomeJSON is what the goldens record of a call's result: the error
// text belongs to the registry and is left out, so that the goldens pin
// this package.
type outcomeJSON struct {
	ID      string         `json:"id"`
	Output  string         `json:"output,omitempty"`
	IsError bool           `json:"is_error"`
	Kind    tool.ErrorKind `json:"kind,omitempty"`
}

// runCalls runs calls one by one through a registry of testTools.
func runCalls(t *testing.T, calls []tool.Call) callsCase {
	t.Helper()
	r := tool.NewRegistry()
	for _, tl := range testTools() {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	var c callsCase
	for _, call := range calls {
		c.Calls = append(c.Calls, callJSON{call.ID, call.Name, string(call.Args)})
		res := r.Execute(context.Background(), call.Name, call.Args)
		c.Outcomes = append(c.Outcomes, outcomeJSON{call.ID, res.Output, res.IsError, res.Kind})
	}
	return c
}

const chatParallel = `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-2024-08-06",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_FthC9qRpsL5kBpwwyw6c7j4k", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_mNsFHXz4VhqZ4yD7hXqmUUy3", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Tokyo\"}"}},
        {"id": "call_3sD9VqGUtm8cYkqTfPu0qc2d", "type": "function", "function": {"name": "search_flights", "arguments": "{\"from\":\"CDG\",\"to\":\"HND\",\"date\":\"2026-12-24\"}"}}
      ],
      "refusal": null,
      "annotations": []
    },
    "logprobs": null,
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 120, "completion_tokens": 71, "total_tokens": 191},
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`

const chatMalformed = `{
  "choices": [{
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [
        {"id": "call_not_json", "type": "function", "function": {"name": "weather", "arguments": "{city: Paris}"}},
        {"id": "call_double", "type": "function", "function": {"name": "weather", "arguments": "\"{\\\"city\\\":\\\"Paris\\\"}\""}},
        {"id": "call_truncated", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Par"}},
        {"type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
        {"id": "call_unknown", "type": "function", "function": {"name": "wether", "arguments": "{\"city\":\"Rome\"}"}},
        {"id": "call_object_args", "type": "function", "function": {"name": "weather", "arguments": {"city": "Lima"}}},
        {"id": "call_no_args", "type": "function", "function": {"name": "weather"}},
        {"id": "call_double", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Bern\"}"}},
        "not a tool call",
        {"id": 42, "function": {"name": ["weather"], "arguments": 7}}
      ]
    },
    "finish_reason": "length"
  }]
}`

const responsesOutput = `{
  "id": "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0",
  "object": "response",
  "created_at": 1741294021,
  "status": "completed",
  "model": "gpt-4.1-2025-04-14",
  "output": [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "id": "fc_67ca09c6bedc8190a7abfec07b1a1332096610f474011cc0", "call_id": "call_unLAR8MvFNptuiZK6K6HCy5k", "name": "weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
    {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "search_flights", "arguments": "{\"from\":\"CDG\",\"to\":\"hnd\",\"date\":\"2026-12-24\",\"passengers\":12}", "status": "completed"},
    {"type": "function_call", "id": "fc_3", "name": "weather", "arguments": "{\"city\":\"Oslo\"}", "status": "completed"},
    {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}
  ]
}`

func TestGoldenCalls(t *testing.T) {
	for _, tt := range []struct {
		name  string
		body  string
		parse func([]byte) ([]tool.Call, error)
	}{
		{"calls_chat_parallel", chatParallel, ChatCalls},
		{"calls_chat_malformed", chatMalformed, ChatCalls},
		{"calls_responses", responsesOutput, ResponsesCalls},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := tt.parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, tt.name, runCalls(t, calls))
		})
	}
}

func TestMalformedCallsGetErrorResults(t *testing.T) {
	calls, err := ChatCalls([]byte(chatMalformed))
	if err != nil {
		t.Fatal(err)
	}
	c := runCalls(t, calls)
	wantError := map[string]bool{"call_not_json": true, "call_double": true, "call_truncated": true, "call_unknown": true}
	seen := map[string]bool{}
	for _, o := range c.Outcomes {
		if seen[o.ID] {
			t.Errorf("duplicate id %q", o.ID)
		}
		seen[o.ID] = true
		if wantError[o.ID] && !o.IsError {
			t.Errorf("call %s: %+v, want an error result", o.ID, o)
		}
	}
	if len(c.Outcomes) != 10 {
		t.Errorf("%d outcomes, want one per call (10)", len(c.Outcomes))
	}
}

func TestWholeResponseMalformed(t *testing.T) {
	for _, body := range []string{``, `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"a"`, `[]`, `{"choices":[]}`, `{"error":{"message":"rate limited"}}`, `null`} {
		if _, err := ChatCalls([]byte(body)); err == nil {
			t.Errorf("ChatCalls(%q) gave no error", body)
		}
	}
	for _, body := range []string{``, `{"output":[{"type":"function_call"`, `{}`, `7`} {
		if _, err := ResponsesCalls([]byte(body)); err == nil {
			t.Errorf("ResponsesCalls(%q) gave no error", body)
		}
	}
}

func testOutcomes() []tool.Outcome {
	return []tool.Outcome{
		{ID: "call_1", Result: tool.Result{Output: `{"temp_c":18}`}},
		{ID: "call_2", Result: tool.Result{}},
		{ID: "call_3", Result: tool.Result{IsError: true, Kind: tool.KindInvalidArguments, Error: `invalid arguments for tool "search_flights": /to: expected a string matching ^[A-Z]{3}$, got "hnd"`}},
		{ID: "call_4", Result: tool.Result{Output: "the map:", Parts: []tool.Part{tool.Image("image/png", []byte("\x89PNG"))}}},
	}
}

func TestGoldenResults(t *testing.T) {
	golden.JSON(t, "results_chat", ChatResults(testOutcomes()))
	golden.JSON(t, "results_responses", ResponsesResults(testOutcomes()))
	calls, _ := ChatCalls([]byte(chatParallel))
	golden.JSON(t, "assistant_message", AssistantMessage("", calls))
}
