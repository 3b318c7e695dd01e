package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// The agent loop's recorded exchanges (agent/testdata) hold the requests
// the loop sends: each must decode into the SDK's request type without
// loss, and each recorded response into the SDK's response type.
func TestAgentRecordingsMatchSDKTypes(t *testing.T) {
	files, err := filepath.Glob("../agent/testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Exchanges []struct {
					Request  json.RawMessage `json:"request"`
					Response json.RawMessage `json:"response"`
				} `json:"exchanges"`
			}
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			for i, ex := range rec.Exchanges {
				if strings.HasPrefix(filepath.Base(f), "anthropic") {
					var req anthropic.MessageNewParams
					roundTripAs(t, ex.Request, &req, expandAnthropicRequest)
					var resp anthropic.Message
					if err := json.Unmarshal(ex.Response, &resp); err != nil || resp.ID == "" {
						t.Errorf("exchange %d: response does not decode: %v", i, err)
					}
					continue
				}
				var req openai.ChatCompletionNewParams
				roundTrip(t, ex.Request, &req)
				var resp openai.ChatCompletion
				if err := json.Unmarshal(ex.Response, &resp); err != nil || len(resp.Choices) == 0 {
					t.Errorf("exchange %d: response does not decode: %v", i, err)
				}
			}
		})
	}
}

// expandAnthropicRequest rewrites the string forms the Messages API
// accepts (a string system prompt, message content or tool_result
// content) into the text-block form the SDK writes.
func expandAnthropicRequest(v any) {
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	m, _ := v.(map[string]any)
	if s, ok := m["system"].(string); ok {
		m["system"] = text(s)
	}
	msgs, _ := m["messages"].([]any)
	for _, msg := range msgs {
		mm, _ := msg.(map[string]any)
		if s, ok := mm["content"].(string); ok {
			mm["content"] = text(s)
		}
		expandToolResultText(mm)
	}
}
