package openaitool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

func TestToolSearchCalls(t *testing.T) {
	tests := []struct {
		body string
		want []tool.Call
		err  error
	}{
		{`{"output":[{"type":"tool_search_call","call_id":"c1","execution":"client","arguments":{"query":"x"}},{"type":"function_call","call_id":"f1","name":"n","arguments":"{}"}]}`,
			[]tool.Call{{ID: "c1", Name: "tool_search", Args: json.RawMessage(`{"query":"x"}`)}}, nil},
		{`[{"type":"tool_search_call","id":"tsc_9","arguments":"{\"query\":\"y\"}"}]`,
			[]tool.Call{{ID: "tsc_9", Name: "tool_search", Args: json.RawMessage(`{"query":"y"}`)}}, nil},
		{`{"output":[{"type":"tool_search_call","call_id":"s","execution":"server","arguments":{}}]}`, nil, nil},
		{`{"error":{"message":"bad"}}`, nil, ErrMalformed},
		{`7`, nil, ErrMalformed},
	}
	for _, tt := range tests {
		got, err := ToolSearchCalls([]byte(tt.body))
		if !errors.Is(err, tt.err) {
			t.Errorf("%s: err = %v, want %v", tt.body, err, tt.err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.body, got, tt.want)
			continue
		}
		for i := range got {
			if got[i].ID != tt.want[i].ID || got[i].Name != tt.want[i].Name || string(got[i].Args) != string(tt.want[i].Args) {
				t.Errorf("%s: call %d = %+v, want %+v", tt.body, i, got[i], tt.want[i])
			}
		}
	}
}

func TestToolSearchOutput(t *testing.T) {
	found := []tool.Tool{echotool.New("weather", "Weather.", `{"type":"object","properties":{"city":{"type":"string"}}}`)}
	item, err := ToolSearchOutput("c1", found)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(item)
	want := `{"type":"tool_search_output","call_id":"c1","execution":"client","status":"completed","tools":[{"type":"function","name":"weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	ts, _ := NewTools(found)
	defs := ts.ResponsesDeferred(func(string) bool { return true }, ToolSearchTool{Type: "tool_search", Execution: "server"})
	wantDefs := `[{"type":"function","name":"weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false,"defer_loading":true},{"type":"tool_search","execution":"server"}]`
	if string(defs) != wantDefs {
		t.Errorf("got  %s\nwant %s", defs, wantDefs)
	}
	if _, err := ToolSearchOutput("c1", []tool.Tool{nil}); err == nil {
		t.Error("nil tool accepted")
	}
}
