package agent

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/openaitool"
)

// FuzzStreamEvents reads arbitrary bytes as a stream of either API: it
// never panics, and a reply it puts together is JSON the conversation can
// read.
func FuzzStreamEvents(f *testing.F) {
	f.Add(true, chatChunk(`{"content":"Hi"}`)+chatChunk(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"calc","arguments":"{\"x\":"}}]}`)+chatFinish("stop")+data("[DONE]"))
	f.Add(true, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":7},{\"index\":7,\"id\":\"a\"},{\"index\":7,\"id\":\"b\"}]}}]}\n\ndata: [DONE]\n\n")
	f.Add(false, msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"calc","input":{}}}`)+
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\""}}`)+
		msgEvent("message_stop", `{"type":"message_stop"}`))
	f.Add(false, msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":1}}`)+
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}`)+
		msgEvent("message_stop", `{"type":"message_stop"}`))
	f.Add(false, "event: x\ndata\n\n:\n\ndata: {}\n\n")
	f.Fuzz(func(t *testing.T, chat bool, stream string) {
		var acc interface {
			event(string, []byte) (bool, error)
			reply() ([]byte, error)
		}
		var conv conversation
		if chat {
			acc = &chatStream{onText: func(string) {}}
			conv = &chatConv{model: OpenAI("", "", ""), tools: mustTools(t)}
		} else {
			acc = &messagesStream{onText: func(string) {}}
			conv = &messagesConv{model: Anthropic("", "")}
		}
		if readEvents(bufio.NewReader(strings.NewReader(stream)), acc.event) != nil {
			return
		}
		reply, err := acc.reply()
		if err != nil {
			return
		}
		if !json.Valid(reply) {
			t.Fatalf("reply is not JSON: %s", reply)
		}
		if _, _, err := conv.reply(reply); err != nil {
			t.Fatalf("the conversation cannot read the reply %s: %v", reply, err)
		}
	})
}

func mustTools(t *testing.T) *openaitool.Tools {
	ts, err := openaitool.NewTools(nil)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
