package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
)

// clock is a hand-written tool.
type clock struct{}

func (clock) Name() string                { return "clock" }
func (clock) Description() string         { return "Tells the time." }
func (clock) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (clock) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: "12:00"}, nil
}

// Example runs the loop against a stand-in for an OpenAI-compatible
// server, which first asks for the clock tool and then answers. With a
// real endpoint, use agent.FromEnv(os.Getenv, "", "") instead.
func Example() {
	turn := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		turn++
		if turn == 1 {
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"clock","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"It is noon."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()

	reg := tool.NewRegistry()
	if err := reg.Register(clock{}); err != nil {
		log.Fatal(err)
	}
	a := agent.New(agent.OpenAI(srv.URL, "", "local-model"), reg,
		agent.WithObserver(func(e agent.Event) {
			switch e.Kind {
			case agent.EventToolCall:
				fmt.Println("call:", e.Call.Name, string(e.Call.Args))
			case agent.EventToolResult:
				fmt.Println("result:", strings.TrimSpace(e.Outcome.Result.Output))
			}
		}))
	answer, err := a.Run(context.Background(), "What time is it?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("answer:", answer)
	// Output:
	// call: clock {}
	// result: 12:00
	// answer: It is noon.
}

// ExampleSession holds a conversation over two prompts, with the model's
// text streamed as it arrives, against a stand-in for an Anthropic
// Messages server that streams one word per event and remembers the
// user's name from the earlier turn it is sent again.
func ExampleSession() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []json.RawMessage }
		json.NewDecoder(r.Body).Decode(&req)
		reply := "Hello, Ada."
		if len(req.Messages) > 1 { // the first prompt and answer came back
			reply = "You are Ada."
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for _, word := range strings.SplitAfter(reply, " ") {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", word)
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()

	m := agent.Anthropic("key", "", agent.WithBaseURL(srv.URL)) // the base without /v1
	s := agent.New(m, tool.NewRegistry(), agent.WithStream(func(text string) {
		fmt.Printf("[%s]", text)
	})).NewSession()
	for _, prompt := range []string{"I am Ada.", "Who am I?"} {
		if _, err := s.Send(context.Background(), prompt); err != nil {
			log.Fatal(err)
		}
		fmt.Println()
	}
	// Output:
	// [Hello, ][Ada.]
	// [You ][are ][Ada.]
}
