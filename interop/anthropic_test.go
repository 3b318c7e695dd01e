package interop

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
)

func TestAnthropicDefinitions(t *testing.T) {
	params, err := anthropictool.ToolParams(sampleTools())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range params {
		b, _ := json.Marshal(p)
		var tp anthropic.ToolParam
		roundTrip(t, b, &tp)
		if tp.Name != p.Name || tp.Description.Value != p.Description {
			t.Errorf("tool %d decoded as %q %q", i, tp.Name, tp.Description.Value)
		}
		var u anthropic.ToolUnionParam
		roundTrip(t, b, &u)
		if u.OfTool == nil {
			t.Errorf("tool %d is not a custom tool for the SDK", i)
		}
	}
	// The SDK's input schema keeps every keyword: properties and required
	// in fields, the rest in ExtraFields.
	b, _ := json.Marshal(params[1])
	var tp anthropic.ToolParam
	json.Unmarshal(b, &tp)
	if tp.InputSchema.ExtraFields["$defs"] == nil || tp.InputSchema.ExtraFields["additionalProperties"] != false || len(tp.InputSchema.Required) != 3 {
		t.Errorf("input schema decoded as %+v", tp.InputSchema)
	}
}

func TestAnthropicResultMessage(t *testing.T) {
	msg := anthropictool.Results(sampleOutcomes())
	b, _ := json.Marshal(msg)
	var mp anthropic.MessageParam
	// The API takes a tool_result's content as a string or as text blocks;
	// the SDK keeps the string as one text block. Same text, other form.
	roundTripAs(t, b, &mp, expandToolResultText)
	if mp.OfUser == nil || len(mp.OfUser.Content) != 3 {
		t.Fatalf("decoded as %+v, want a user message with 3 blocks", mp)
	}
	for i, blk := range mp.OfUser.Content {
		tr := blk.OfToolResult
		o := sampleOutcomes()[i]
		if tr == nil || tr.ToolUseID != o.ID || tr.IsError.Value != o.Result.IsError {
			t.Errorf("block %d decoded as %+v", i, tr)
		}
	}
}

// TestAnthropicResultParts checks that a tool_result carrying parts
// decodes in the SDK as text, image and document blocks, and that the SDK
// writes it back unchanged.
func TestAnthropicResultParts(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n")
	msg := anthropictool.Results([]tool.Outcome{{ID: "toolu_1", Result: tool.Result{Output: "chart and report:", Parts: []tool.Part{
		tool.Image("image/png", png),
		tool.BlobResource("file:///r.pdf", "application/pdf", []byte("%PDF-1.7")),
	}}}})
	b, _ := json.Marshal(msg)
	var mp anthropic.MessageParam
	roundTripAs(t, b, &mp, nil)
	if mp.OfUser == nil || len(mp.OfUser.Content) != 1 || mp.OfUser.Content[0].OfToolResult == nil {
		t.Fatalf("decoded as %+v, want a user message with one tool_result", mp)
	}
	content := mp.OfUser.Content[0].OfToolResult.Content
	if len(content) != 3 {
		t.Fatalf("tool_result content has %d blocks, want 3", len(content))
	}
	if c := content[0].OfText; c == nil || c.Text != "chart and report:" {
		t.Errorf("block 0 = %+v, want the text", content[0])
	}
	if c := content[1].OfImage; c == nil || c.Source.OfBase64 == nil || c.Source.OfBase64.MediaType != "image/png" ||
		c.Source.OfBase64.Data != base64.StdEncoding.EncodeToString(png) {
		t.Errorf("block 1 = %+v, want a base64 PNG image", content[1])
	}
	if c := content[2].OfDocument; c == nil || c.Source.OfBase64 == nil || c.Source.OfBase64.Data != base64.StdEncoding.EncodeToString([]byte("%PDF-1.7")) {
		t.Errorf("block 2 = %+v, want a base64 PDF document", content[2])
	}
}

const anthropicMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[
 {"type":"thinking","thinking":"Two cities.","signature":"EqQBCgIYAhIM"},
 {"type":"text","text":"Checking both."},
 {"type":"tool_use","id":"toolu_a","name":"weather","input":{"city":"Paris"}},
 {"type":"tool_use","id":"toolu_b","name":"weather","input":{"city":"Lima","units":"imperial"}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":20}}`

func TestAnthropicCallsFromSDKTypes(t *testing.T) {
	var m anthropic.Message
	if err := json.Unmarshal([]byte(anthropicMessage), &m); err != nil {
		t.Fatal(err)
	}
	var want []tool.Call
	for _, blk := range m.Content {
		if tu, ok := blk.AsAny().(anthropic.ToolUseBlock); ok {
			want = append(want, tool.Call{ID: tu.ID, Name: tu.Name, Args: tu.Input})
		}
	}
	if len(want) != 2 {
		t.Fatalf("the SDK read %d tool_use blocks", len(want))
	}
	param, err := json.Marshal(m.ToParam()) // what a user sends back as history
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"Message.RawJSON": []byte(m.RawJSON()), "Message.ToParam": param} {
		calls, err := anthropictool.Calls(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, calls, cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("%s: calls differ from the SDK's reading (-sdk +ours):\n%s", name, diff)
		}
	}
	if got := anthropictool.Text([]byte(m.RawJSON())); got != "Checking both." {
		t.Errorf("Text = %q", got)
	}
}

// expandToolResultText rewrites string tool_result content into the
// one-text-block form the SDK uses.
func expandToolResultText(v any) {
	m, _ := v.(map[string]any)
	blocks, _ := m["content"].([]any)
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		if s, ok := bm["content"].(string); ok && bm["type"] == "tool_result" {
			bm["content"] = []any{map[string]any{"type": "text", "text": s}}
		}
	}
}

// jsonEqual compares JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}
