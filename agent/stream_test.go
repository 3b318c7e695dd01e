package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// sseServer is a model API on 127.0.0.1 that answers the n-th request
// with the n-th script: a list of server-sent events, written and flushed
// one at a time. An event "WAIT" is not sent: the server waits there until
// the client has shown the text before it (release is called), which
// proves that text arrives while the stream is still open.
type sseServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests [][]byte
	released chan struct{}
	waited   []bool // per WAIT: whether the client released it in time
}

func newSSEServer(t *testing.T, scripts ...[]string) *sseServer {
	s := &sseServer{released: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, body)
		s.mu.Unlock()
		if n >= len(scripts) {
			http.Error(w, "no more scripted replies", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range scripts[n] {
			if ev == "WAIT" {
				// Not a measure of speed: the guard only keeps a client
				// that does not stream from hanging the test.
				ok := false
				select {
				case <-s.released:
					ok = true
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				s.mu.Lock()
				s.waited = append(s.waited, ok)
				s.mu.Unlock()
				continue
			}
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// release lets a waiting stream go on.
func (s *sseServer) release() {
	select {
	case s.released <- struct{}{}:
	default:
	}
}

func (s *sseServer) request(t *testing.T, i int) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.requests) {
		t.Fatalf("only %d requests were sent", len(s.requests))
	}
	var v map[string]any
	if err := json.Unmarshal(s.requests[i], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func data(v string) string { return "data: " + v + "\n\n" }

func chatChunk(delta string) string {
	return data(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`)
}

func chatFinish(reason string) string {
	return data(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`)
}

func msgEvent(name, payload string) string {
	return "event: " + name + "\ndata: " + payload + "\n\n"
}

// The text of a streamed reply reaches WithStream's function piece by
// piece while the stream is open; tool calls whose names and arguments
// come in pieces are put together and run; the answer is returned whole.
func TestStream(t *testing.T) {
	chatScripts := [][]string{{
		chatChunk(`{"role":"assistant","content":"Let me "}`),
		chatChunk(`{"content":"look."}`),
		chatChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]}`),
		chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`),
		chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`),
		chatFinish("tool_calls"),
		data("[DONE]"),
	}, {
		": a comment line\n\n",
		chatChunk(`{"role":"assistant","content":"It is "}`),
		"WAIT",
		chatChunk(`{"content":"sunny."}`),
		chatFinish("stop"),
		data("[DONE]"),
	}}
	msgScripts := [][]string{{
		msgEvent("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null}}`),
		msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Weather tool."}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}`),
		msgEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		msgEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}`),
		msgEvent("ping", `{"type":"ping"}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"look."}}`),
		msgEvent("content_block_stop", `{"type":"content_block_stop","index":1}`),
		msgEvent("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`),
		msgEvent("content_block_stop", `{"type":"content_block_stop","index":2}`),
		msgEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`),
		msgEvent("message_stop", `{"type":"message_stop"}`),
	}, {
		msgEvent("message_start", `{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","content":[],"stop_reason":null}}`),
		msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"It is "}}`),
		"WAIT",
		msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sunny."}}`),
		msgEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		msgEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`),
		msgEvent("message_stop", `{"type":"message_stop"}`),
	}}
	for _, tt := range []struct {
		api     API
		scripts [][]string
		// assistant finds the assistant turn with the tool call in the
		// second request and returns the call's arguments as sent back.
		assistant func(t *testing.T, req map[string]any) string
	}{
		{ChatCompletions, chatScripts, func(t *testing.T, req map[string]any) string {
			msgs := req["messages"].([]any)
			m := msgs[1].(map[string]any)
			if m["content"] != "Let me look." {
				t.Errorf("assistant content sent back = %v", m["content"])
			}
			return m["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
		}},
		{Messages, msgScripts, func(t *testing.T, req map[string]any) string {
			msgs := req["messages"].([]any)
			blocks := msgs[1].(map[string]any)["content"].([]any)
			th := blocks[0].(map[string]any)
			if th["type"] != "thinking" || th["thinking"] != "Weather tool." || th["signature"] != "sig==" {
				t.Errorf("thinking block sent back = %v", th)
			}
			if txt := blocks[1].(map[string]any); txt["text"] != "Let me look." {
				t.Errorf("text block sent back = %v", txt)
			}
			b, _ := json.Marshal(blocks[2].(map[string]any)["input"])
			return string(b)
		}},
	} {
		t.Run(string(tt.api), func(t *testing.T) {
			srv := newSSEServer(t, tt.scripts...)
			var pieces []string
			var events []EventKind
			a := New(model(t, tt.api, srv.Server), registry(t, weather{}),
				WithStream(func(s string) {
					pieces = append(pieces, s)
					if s == "It is " {
						srv.release()
					}
				}),
				WithObserver(func(e Event) { events = append(events, e.Kind) }))
			answer, err := a.Run(context.Background(), "Weather in Paris?")
			if err != nil {
				t.Fatal(err)
			}
			if answer != "It is sunny." {
				t.Errorf("answer = %q", answer)
			}
			if want := []string{"Let me ", "look.", "It is ", "sunny."}; strings.Join(pieces, "|") != strings.Join(want, "|") {
				t.Errorf("streamed pieces = %q, want %q", pieces, want)
			}
			if fmt.Sprint(srv.waited) != "[true]" {
				t.Errorf("the first piece of the answer did not reach WithStream's function before the stream ended (waits released: %v)", srv.waited)
			}
			if want := []EventKind{EventText, EventToolCall, EventToolResult}; fmt.Sprint(events) != fmt.Sprint(want) {
				t.Errorf("events = %v, want %v", events, want)
			}
			for i := range 2 {
				if srv.request(t, i)["stream"] != true {
					t.Errorf("request %d does not ask for a stream", i)
				}
			}
			if args := tt.assistant(t, srv.request(t, 1)); args != `{"city":"Paris"}` {
				t.Errorf("tool call arguments sent back = %s", args)
			}
			// user, assistant with the call, the result (a "tool" message or
			// a user turn with a tool_result block).
			if msgs := srv.request(t, 1)["messages"].([]any); len(msgs) != 3 || !strings.Contains(fmt.Sprint(msgs[2]), "toolu_1") && !strings.Contains(fmt.Sprint(msgs[2]), "call_1") {
				t.Errorf("second request's messages = %v, want the result of the call last", msgs)
			}
		})
	}
}

// A session keeps the conversation: the second prompt's request carries
// the first prompt and the model's first answer.
func TestSessionKeepsHistory(t *testing.T) {
	for _, api := range []API{ChatCompletions, Messages} {
		t.Run(string(api), func(t *testing.T) {
			var scripts [][]string
			for _, text := range []string{"Hello, Ada.", "Your name is Ada."} {
				if api == Messages {
					scripts = append(scripts, []string{
						msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
						msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+text+`"}}`),
						msgEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`),
						msgEvent("message_stop", `{"type":"message_stop"}`),
					})
				} else {
					scripts = append(scripts, []string{chatChunk(`{"content":"` + text + `"}`), chatFinish("stop"), data("[DONE]")})
				}
			}
			srv := newSSEServer(t, scripts...)
			s := New(model(t, api, srv.Server), tool.NewRegistry(), WithStream(func(string) {}), WithSystem("Be brief.")).NewSession()
			for i, prompt := range []string{"I am Ada.", "What is my name?"} {
				if _, err := s.Send(context.Background(), prompt); err != nil {
					t.Fatalf("prompt %d: %v", i+1, err)
				}
			}
			var got []string
			for _, m := range srv.request(t, 1)["messages"].([]any) {
				m := m.(map[string]any)
				got = append(got, fmt.Sprintf("%s: %s", m["role"], textOf(m["content"])))
			}
			want := []string{"user: I am Ada.", "assistant: Hello, Ada.", "user: What is my name?"}
			if api == ChatCompletions {
				want = append([]string{"system: Be brief."}, want...)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("second request's messages = %q, want %q", got, want)
			}
		})
	}
}

// textOf reads a message's content: a string or an array of text blocks.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var s string
	if blocks, ok := v.([]any); ok {
		for _, b := range blocks {
			if b, ok := b.(map[string]any); ok {
				s += fmt.Sprint(b["text"])
			}
		}
	}
	return s
}

// After a failed prompt the session is as before it: the next request
// does not carry the prompt that failed.
func TestSessionForgetsAFailedPrompt(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	s := New(OpenAI(srv.URL+"/v1", "", "m"), tool.NewRegistry()).NewSession()
	var apiErr *APIError
	if _, err := s.Send(context.Background(), "first"); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("first Send: err = %v, want an APIError 503", err)
	}
	if answer, err := s.Send(context.Background(), "second"); err != nil || answer != "Hi." {
		t.Fatalf("second Send = %q, %v", answer, err)
	}
	if strings.Contains(bodies[1], "first") {
		t.Errorf("the second request carries the failed prompt: %s", bodies[1])
	}
}

// Streams that end early, carry an error or are not event streams.
func TestStreamEdges(t *testing.T) {
	for _, tt := range []struct {
		name    string
		api     API
		ctype   string
		body    string
		answer  string
		pieces  string
		wantErr string
	}{
		{"chat cut short", ChatCompletions, "text/event-stream", chatChunk(`{"content":"Hel"}`), "", "Hel", "ended before"},
		{"chat finished without DONE", ChatCompletions, "text/event-stream", chatChunk(`{"content":"Hi."}`) + chatFinish("stop"), "Hi.", "Hi.", ""},
		{"chat error chunk", ChatCompletions, "text/event-stream", data(`{"error":{"message":"rate limited"}}`), "", "", "rate limited"},
		{"chat not JSON", ChatCompletions, "text/event-stream", data(`{"choices":`), "", "", "not a JSON chunk"},
		{"chat plain JSON reply", ChatCompletions, "application/json", `{"choices":[{"message":{"role":"assistant","content":"Hi."}}]}`, "Hi.", "Hi.", ""},
		{"chat CRLF lines", ChatCompletions, "text/event-stream", strings.ReplaceAll(chatChunk(`{"content":"Hi."}`)+chatFinish("stop")+data("[DONE]"), "\n", "\r\n"), "Hi.", "Hi.", ""},
		{"messages cut short", Messages, "text/event-stream",
			msgEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
				msgEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`),
			"", "Hel", "ended before"},
		{"messages error event", Messages, "text/event-stream",
			msgEvent("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "", "", "Overloaded"},
		{"messages delta for an unknown block", Messages, "text/event-stream",
			msgEvent("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`), "", "", "did not start"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tt.ctype)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			var pieces strings.Builder
			a := New(model(t, tt.api, srv), tool.NewRegistry(), WithStream(func(s string) { pieces.WriteString(s) }))
			answer, err := a.Run(context.Background(), "hi")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if answer != tt.answer || pieces.String() != tt.pieces {
				t.Errorf("answer %q, streamed %q; want %q, %q", answer, pieces.String(), tt.answer, tt.pieces)
			}
		})
	}
}

// The base URL variables mean what they mean to the providers' SDKs:
// OPENAI_BASE_URL includes /v1, ANTHROPIC_BASE_URL does not.
func TestBaseURLFromEnv(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			io.WriteString(w, `{"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name     string
		getenv   func(string) string
		wantPath string
	}{
		{"openai", env("OPENAI_BASE_URL", srv.URL+"/v1", "OPENAI_MODEL", "m"), "/v1/chat/completions"},
		{"anthropic", env("ANTHROPIC_API_KEY", "k", "ANTHROPIC_BASE_URL", srv.URL), "/v1/messages"},
		{"anthropic, trailing slash", env("ANTHROPIC_API_KEY", "k", "ANTHROPIC_BASE_URL", srv.URL+"/"), "/v1/messages"},
		{"anthropic behind a path prefix", env("ANTHROPIC_API_KEY", "k", "ANTHROPIC_BASE_URL", srv.URL+"/proxy"), "/proxy/v1/messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := FromEnv(tt.getenv, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(m, tool.NewRegistry()).Run(context.Background(), "hi"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := paths[len(paths)-1]; got != tt.wantPath {
				t.Errorf("request went to %s, want %s", got, tt.wantPath)
			}
		})
	}
	if got := Anthropic("k", "").BaseURL(); got != "https://api.anthropic.com" {
		t.Errorf("Anthropic's default base URL = %s, want it without /v1, as the SDKs have it", got)
	}
	if got := OpenAI("", "k", "").BaseURL(); got != "https://api.openai.com/v1" {
		t.Errorf("OpenAI's default base URL = %s, want it with /v1, as the SDKs have it", got)
	}
}
