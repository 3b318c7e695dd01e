package anthropictool

import (
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/miniopenclaw/tool/internal/golden"
	"github.com/miniopenclaw/tool/internal/providercall"
)

func testTools() []tool.Tool {
	return []tool.Tool{
		echotool.New("search_flights", "Searches flights between two airports.", `{"type":"object","properties":{"from":{"type":"string","pattern":"^[A-Z]{3}$"},"to":{"type":"string","pattern":"^[A-Z]{3}$"},"date":{"type":"string","format":"date"},"passengers":{"type":"integer","minimum":1,"maximum":9,"default":1},"cabin":{"type":"string","enum":["economy","business","first"]}},"required":["from","to","date"],"additionalProperties":false}`),
		echotool.New("weather", "Current weather in a city.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}
}

func TestGoldenDefinitions(t *testing.T) {
	defs, err := Tools(testTools())
	if err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, "definitions", json.RawMessage(defs))
	if _, err := Tools([]tool.Tool{echotool.New("bad", "", `[]`)}); err == nil {
		t.Error("Tools accepted a non-object schema")
	}
}

const parallel = `{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [
    {"type": "text", "text": "I'll check both cities."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "weather", "input": {"city": "Paris"}},
    {"type": "tool_use", "id": "toolu_01B19r91rx91mr028946mr0", "name": "weather", "input": {"city": "Tokyo"}},
    {"type": "tool_use", "id": "toolu_01C29s92sy92ns139057ns1", "name": "search_flights", "input": {"from": "CDG", "to": "HND", "date": "2026-12-24"}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 472, "output_tokens": 120}
}`

const malformed = `{
  "role": "assistant",
  "content": [
    {"type": "tool_use", "id": "toolu_string", "name": "weather", "input": "{\"city\":\"Paris\"}"},
    {"type": "tool_use", "id": "toolu_number", "name": "weather", "input": 7},
    {"type": "tool_use", "name": "weather", "input": {"city": "Oslo"}},
    {"type": "tool_use", "id": "toolu_unknown", "name": "wether", "input": {"city": "Rome"}},
    {"type": "tool_use", "id": "toolu_no_input", "name": "weather"},
    {"type": "tool_use", "id": "toolu_dup", "name": "weather", "input": {"city": "Bern"}},
    {"type": "tool_use", "id": "toolu_dup", "name": "weather", "input": {"city": "Graz"}},
    {"type": "tool_use", "id": "toolu_bad_field", "name": "weather", "input": {"town": "Lyon"}},
    "not a block",
    {"type": "thinking", "thinking": "…", "signature": "abc"}
  ]
}`

func TestGoldenCallsAndResults(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"calls_parallel", parallel},
		{"calls_malformed", malformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := Calls([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			out := golden.RunCalls(t, testTools(), calls)
			golden.JSON(t, tt.name, out)
		})
	}
}

func TestGoldenResults(t *testing.T) {
	golden.JSON(t, "results", Results([]tool.Outcome{
		{ID: "toolu_1", Result: tool.Result{Output: `{"temp_c":18}`}},
		{ID: "toolu_2", Result: tool.Result{}},
		{ID: "toolu_3", Result: tool.Result{IsError: true, Kind: tool.KindInvalidArguments, Error: `invalid arguments for tool "search_flights": /to: expected a string matching ^[A-Z]{3}$, got "hnd"`}},
	}))
}

// TestGoldenResultsWithParts pins the tool_result content arrays of
// results with parts: images and PDFs as blocks, the rest described, and
// a failure's parts left out.
func TestGoldenResultsWithParts(t *testing.T) {
	png := []byte("\x89PNG")
	golden.JSON(t, "results_parts", Results([]tool.Outcome{
		{ID: "toolu_1", Result: tool.Result{Output: "the chart:", Parts: []tool.Part{tool.Image("image/png", png)}}},
		{ID: "toolu_2", Result: tool.Result{Parts: []tool.Part{
			tool.Image("image/bmp", png), // not a type the API takes
			tool.BlobResource("file:///r.pdf", "application/pdf", []byte("%PDF-1.7")),
			tool.TextResource("file:///n.txt", "text/plain", "a note"),
			tool.Audio("audio/wav", []byte("RIFF")),
			tool.ResourceLink("file:///big.csv", "big.csv"),
		}}},
		{ID: "toolu_3", Result: tool.Result{IsError: true, Kind: tool.KindToolError, Error: "page did not load", Parts: []tool.Part{tool.Image("image/png", png)}}},
	}))
}

func TestMalformedCallsGetErrorResults(t *testing.T) {
	calls, err := Calls([]byte(malformed))
	if err != nil {
		t.Fatal(err)
	}
	out := golden.RunCalls(t, testTools(), calls)
	if len(out) != 8 {
		t.Fatalf("%d calls, want 8", len(out))
	}
	for _, id := range []string{"toolu_string", "toolu_number", "toolu_unknown"} {
		for _, o := range out {
			if o.ID == id && !o.IsError {
				t.Errorf("%s: %+v, want an error result", id, o)
			}
		}
	}
}

func TestWholeResponseMalformed(t *testing.T) {
	for _, body := range []string{``, `{"content":[{"type":"tool_use"`, `{}`, `"x"`, `{"type":"error","error":{"type":"overloaded_error"}}`} {
		if _, err := Calls([]byte(body)); err == nil {
			t.Errorf("Calls(%q) gave no error", body)
		}
	}
}

func TestText(t *testing.T) {
	if got := Text([]byte(parallel)); got != "I'll check both cities." {
		t.Errorf("Text = %q", got)
	}
}

func TestEmptyOutputResult(t *testing.T) {
	b, _ := json.Marshal(Result("t1", tool.Result{}))
	if string(b) != `{"type":"tool_result","tool_use_id":"t1"}` {
		t.Errorf("empty success = %s", b)
	}
}

func FuzzCalls(f *testing.F) {
	for _, s := range []string{parallel, malformed, `[]`, `[{"type":"tool_use","id":"a"},{"type":"tool_use","id":"a"},{"type":"tool_use","id":"a_2"}]`, `{"content":"hi"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := Calls(data)
		if err != nil {
			return
		}
		if err := providercall.CheckIDs(calls); err != nil {
			t.Fatal(err)
		}
		_ = Text(data)
	})
}
