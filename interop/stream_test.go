package interop

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
)

// The agent reads a streamed reply as the official SDKs' stream
// accumulators do: given the same server-sent events, the assistant turn
// the agent sends back (text and tool calls) matches the message the SDK
// puts together, and the streamed text is the same.
func TestStreamedReplyMatchesSDK(t *testing.T) {
	chatStream := strings.Join([]string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"check."},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":""}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"expression\":"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"2+3\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"calc","arguments":"{\"expression\":\"7*6\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`,
	}, "\n\n") + "\n\n"
	messagesStream := strings.Join([]string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me \"}}",
		"event: ping\ndata: {\"type\":\"ping\"}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"check.\"}}",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"calc\",\"input\":{}}}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"expression\\\":\"}}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"2+3\\\"}\"}}",
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":20}}",
		"event: message_stop\ndata: {\"type\":\"message_stop\"}",
	}, "\n\n") + "\n\n"

	// The server streams the scripted reply to the first request of each
	// client and a plain answer to the agent's second request.
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		messages := strings.HasSuffix(r.URL.Path, "/messages")
		if strings.Contains(string(b), `"tool_call_id"`) || strings.Contains(string(b), `"tool_result"`) {
			w.Header().Set("Content-Type", "application/json")
			if messages {
				io.WriteString(w, `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"5 and 42."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
			} else {
				io.WriteString(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"5 and 42."},"finish_reason":"stop"}]}`)
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if messages {
			io.WriteString(w, messagesStream)
		} else {
			io.WriteString(w, chatStream)
		}
	}))
	defer srv.Close()
	lastBody := func() string {
		mu.Lock()
		defer mu.Unlock()
		return bodies[len(bodies)-1]
	}
	ctx := context.Background()
	reg := tool.NewRegistry()
	if err := reg.Register(echotool.New("calc", "Evaluates an expression.", `{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)); err != nil {
		t.Fatal(err)
	}
	// runAgent runs the agent and returns the streamed text of its first
	// reply (the second, plain JSON, is handed over whole after it) and the
	// assistant turn it sent back in its second request.
	runAgent := func(m *agent.Model) (string, json.RawMessage) {
		var streamed strings.Builder
		var assistant json.RawMessage
		a := agent.New(m, reg, agent.WithStream(func(s string) { streamed.WriteString(s) }))
		if _, err := a.Run(ctx, "2+3 and 7*6?"); err != nil {
			t.Fatal(err)
		}
		var req struct{ Messages []json.RawMessage }
		if err := json.Unmarshal([]byte(lastBody()), &req); err != nil || len(req.Messages) < 2 {
			t.Fatalf("second request: %v", err)
		}
		assistant = req.Messages[1]
		first, ok := strings.CutSuffix(streamed.String(), "5 and 42.")
		if !ok {
			t.Errorf("the plain JSON answer was not handed over after the stream: %q", streamed.String())
		}
		return first, assistant
	}

	t.Run("openai", func(t *testing.T) {
		c := openai.NewClient(oaoption.WithBaseURL(srv.URL+"/v1"), oaoption.WithAPIKey("k"), oaoption.WithMaxRetries(0))
		stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		var acc openai.ChatCompletionAccumulator
		var sdkText strings.Builder
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 {
				sdkText.WriteString(chunk.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := acc.Choices[0].Message
		text, raw := runAgent(agent.OpenAI(srv.URL+"/v1", "k", "m"))
		var got openai.ChatCompletionMessage
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if text != sdkText.String() || got.Content != want.Content {
			t.Errorf("agent streamed %q and sent back %q; the SDK has %q", text, got.Content, want.Content)
		}
		type call struct{ ID, Name, Args string }
		calls := func(m openai.ChatCompletionMessage) (out []call) {
			for _, tc := range m.ToolCalls {
				out = append(out, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			return out
		}
		if diff := cmp.Diff(calls(want), calls(got)); diff != "" || len(calls(want)) != 2 {
			t.Errorf("tool calls (-SDK +agent):\n%s", diff)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		c := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
		stream := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 16, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var want anthropic.Message
		var sdkText strings.Builder
		for stream.Next() {
			ev := stream.Current()
			if err := want.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
			if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
				sdkText.WriteString(d.Delta.Text)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		text, raw := runAgent(agent.Anthropic("k", "m", agent.WithBaseURL(srv.URL)))
		var got struct {
			Content []anthropic.ContentBlockUnion `json:"content"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		type block struct{ Type, Text, ID, Name, Input string }
		blocks := func(bs []anthropic.ContentBlockUnion) (out []block) {
			for _, b := range bs {
				var input string
				if len(b.Input) > 0 {
					var v any
					json.Unmarshal(b.Input, &v)
					in, _ := json.Marshal(v)
					input = string(in)
				}
				out = append(out, block{b.Type, b.Text, b.ID, b.Name, input})
			}
			return out
		}
		if text != sdkText.String() {
			t.Errorf("agent streamed %q, the SDK %q", text, sdkText.String())
		}
		if diff := cmp.Diff(blocks(want.Content), blocks(got.Content)); diff != "" || len(want.Content) != 2 {
			t.Errorf("assistant content (-SDK +agent):\n%s", diff)
		}
	})
}
