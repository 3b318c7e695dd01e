package openaitool

import (
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/providercall"
)

func FuzzChatCalls(f *testing.F) {
	for _, s := range []string{chatParallel, chatMalformed, ``, `{}`, `{"choices":[{"message":null}]}`,
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"\"\\ud800\""}}]}`,
		`{"tool_calls":[{"id":"a"},{"id":"a"},{"id":"a_2"}]}`, `{"choices":[{"message":{"tool_calls":{}}}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := ChatCalls(data)
		if err != nil {
			return
		}
		if err := providercall.CheckIDs(calls); err != nil {
			t.Fatalf("%v in %+v", err, calls)
		}
		_ = AssistantMessage("", calls)
	})
}

func FuzzResponsesCalls(f *testing.F) {
	for _, s := range []string{responsesOutput, `[]`, `[{"type":"function_call"}]`, `{"output":[{"type":"function_call","call_id":"x"},{"type":"function_call","call_id":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := ResponsesCalls(data)
		if err != nil {
			return
		}
		if err := providercall.CheckIDs(calls); err != nil {
			t.Fatalf("%v in %+v", err, calls)
		}
	})
}

// FuzzStrictSchema checks that the rewrite never panics and that whatever
// it accepts comes out as JSON whose objects are all closed.
func FuzzStrictSchema(f *testing.F) {
	for _, tl := range testTools() {
		f.Add([]byte(tl.Parameters()))
	}
	for _, s := range []string{`{"type":"object"}`, `{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}],"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","$defs":{"a":{"$defs":{}}}}`, `{"type":"object","properties":{"e":{"enum":[1,null]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		out, _, err := StrictSchema(schema)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("StrictSchema(%s) = %s, not JSON", schema, out)
		}
	})
}

func FuzzNormalize(f *testing.F) {
	ts, err := NewTools(testTools(), WithStrict(StrictOn))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"passengers":null,"cabin":null}`, `{"airlines":[null]}`, `null`, `{"a":`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		calls := ts.Normalize([]tool.Call{{ID: "1", Name: "search_flights", Args: json.RawMessage(args)}})
		if json.Valid([]byte(args)) && !json.Valid(calls[0].Args) {
			t.Fatalf("Normalize(%s) = %s, not JSON", args, calls[0].Args)
		}
	})
}
