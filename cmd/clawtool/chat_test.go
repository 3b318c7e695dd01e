package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestChatWithoutEndpointSaysWhatToSet(t *testing.T) {
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	code := chat(context.Background(), e, []string{"hello"}, func(string) string { return "" })
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(stderr.String(), v) {
			t.Errorf("stderr does not mention %s:\n%s", v, stderr.String())
		}
	}
}

func TestChatUsage(t *testing.T) {
	for _, args := range [][]string{{"-strict"}, {"-strict", "maybe", "hi"}, {"-nope"}, {"hi", "-max-steps", "x"}} {
		var stdout, stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
		if code := chat(context.Background(), e, args, func(string) string { return "" }); code != exitUsage {
			t.Errorf("chat %q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// A chat against a local OpenAI-compatible server: the model calls a tool,
// then answers; each call and result is printed as it happens.
func TestChatRunsTheLoop(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) == 1 {
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"expression\":\"2+3\"}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"It is 5."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	getenv := localModelEnv(srv.URL)
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader("What is 2+3?"), stdout: &stdout, stderr: &stderr}
	if code := chat(context.Background(), e, []string{"-"}, getenv); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if stdout.String() != "It is 5.\n" {
		t.Errorf("stdout = %q", stdout.String())
	}
	for _, want := range []string{`[1] → calc {"expression":"2+3"}`, "[1] ← calc"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not show %q:\n%s", want, stderr.String())
		}
	}
}

// signalWriter is a stdout that tells, once, when what has been written
// so far contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Without a prompt, chat is a session: each line of input is a prompt,
// the second request carries the first exchange, the model's text is on
// stdout before its stream ends, and /exit ends the session.
func TestChatSession(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			stdout := &signalWriter{want: "Hello, ", seen: make(chan struct{})}
			var mu sync.Mutex
			var requests []map[string]any
			released := true
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req map[string]any
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
					t.Error(err)
				}
				mu.Lock()
				requests = append(requests, req)
				n := len(requests)
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				send := func(text string) {
					if api == "anthropic" {
						fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
					} else {
						fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text)
					}
					w.(http.Flusher).Flush()
				}
				if api == "anthropic" {
					io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
				}
				if n == 1 {
					send("Hello, ")
					// Wait for the text to reach stdout. Not a measure of
					// speed: the guard only keeps a client that does not
					// stream from hanging the test.
					select {
					case <-stdout.seen:
					case <-r.Context().Done():
					case <-time.After(time.Minute):
						mu.Lock()
						released = false
						mu.Unlock()
					}
					send("Ada.")
				} else {
					send("Your name is Ada.")
				}
				if api == "anthropic" {
					io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
				} else {
					io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
				}
			}))
			defer srv.Close()
			getenv := func(k string) string {
				return map[string]string{
					"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "local", // with /v1, as OpenAI's SDKs read it
					"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL, // without /v1, as Anthropic's SDKs read it
				}[k]
			}
			var stderr bytes.Buffer
			e := &env{stdin: strings.NewReader("I am Ada.\n\nWhat is my name?\n/exit\nNever sent.\n"), stdout: stdout, stderr: &stderr}
			if code := chat(context.Background(), e, []string{"--api", api}, getenv); code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, &stderr)
			}
			if got, want := stdout.String(), "Hello, Ada.\nYour name is Ada.\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if !released {
				t.Error("the first piece of the answer was not on stdout before the stream ended")
			}
			if len(requests) != 2 {
				t.Fatalf("%d requests, want 2 (the line after /exit is not sent)", len(requests))
			}
			var got []string
			for _, m := range requests[1]["messages"].([]any) {
				m := m.(map[string]any)
				content := m["content"]
				if blocks, ok := content.([]any); ok { // Messages: the assistant's blocks
					content = blocks[0].(map[string]any)["text"]
				}
				got = append(got, fmt.Sprintf("%s: %v", m["role"], content))
			}
			want := []string{"user: I am Ada.", "assistant: Hello, Ada.", "user: What is my name?"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("second request's messages = %q, want %q", got, want)
			}
			if requests[0]["stream"] != true {
				t.Errorf("the request does not ask for a stream: %v", requests[0])
			}
		})
	}
}

// A session goes on after a prompt that fails, and exits 1 at the end.
func TestChatSessionGoesOnAfterAFailure(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n.Add(1) == 1 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	getenv := localModelEnv(srv.URL)
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader("one\ntwo\n"), stdout: &stdout, stderr: &stderr}
	if code := chat(context.Background(), e, []string{"-stream=false"}, getenv); code != exitToolError {
		t.Errorf("exit %d, want %d", code, exitToolError)
	}
	if stdout.String() != "Hi.\n" || !strings.Contains(stderr.String(), "503") {
		t.Errorf("stdout %q, stderr %q; want the second answer and the first error", &stdout, &stderr)
	}
}

// chat --word-vectors loads the table before the conversation: a file
// that is not word vectors is a usage error that says so, and the small
// table of toolsearch's tests lets the conversation run.
func TestChatWordVectors(t *testing.T) {
	srv := httptest.NewServer(answersDone())
	defer srv.Close()
	getenv := localModelEnv(srv.URL)
	for _, c := range []struct {
		file   string
		code   int
		stderr string
	}{
		{"testdata/cli/search.golden", exitUsage, "word vectors: testdata/cli/search.golden: at byte 1"},
		{"../../toolsearch/testdata/wordvec/small.wv", exitOK, ""},
	} {
		var stdout, stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
		code := chat(context.Background(), e, []string{"--word-vectors", c.file, "hello"}, getenv)
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("chat --word-vectors %s: exit %d, want %d; stderr:\n%s", c.file, code, c.code, stderr.String())
		}
		if c.code == exitOK && stdout.String() != "Done.\n" {
			t.Errorf("chat --word-vectors %s: stdout %q", c.file, stdout.String())
		}
	}
}

// localModelEnv is the environment of a chat whose model is the
// OpenAI-compatible server at url, named "local".
func localModelEnv(url string) func(string) string {
	return func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": url + "/v1", "OPENAI_MODEL": "local"}[k]
	}
}

// answersDone is a model server that answers every request "Done."
// without tool calls.
func answersDone() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}`)
	})
}
