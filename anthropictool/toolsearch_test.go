package anthropictool

import (
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

func TestToolSearchShapes(t *testing.T) {
	tools := []tool.Tool{
		echotool.New("weather", "Weather.", `{"type":"object"}`),
		echotool.New("now", "Time.", `{"type":"object"}`),
	}
	params, err := DeferredToolParams(tools, func(name string) bool { return name == "weather" })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"deferred", params, `[{"name":"weather","description":"Weather.","input_schema":{"type":"object"},"defer_loading":true},{"name":"now","description":"Time.","input_schema":{"type":"object"}}]`},
		{"regex", ServerSearchTool(ToolSearchRegex), `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`},
		{"bm25", ServerSearchTool(ToolSearchBM25), `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`},
		{"references", ToolReferences("toolu_1", []string{"weather"}), `{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"weather"}]}`},
		{"no references", ToolReferences("toolu_1", nil), `{"type":"tool_result","tool_use_id":"toolu_1","content":"Nothing fits: no available tool does this. Do not call a tool for it; say that it cannot be done with the tools at hand, or search once more with other words if the request was described poorly."}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, b, tt.want)
		}
	}
	if _, err := DeferredToolParams([]tool.Tool{nil}, func(string) bool { return true }); err == nil {
		t.Error("nil tool accepted")
	}
}
