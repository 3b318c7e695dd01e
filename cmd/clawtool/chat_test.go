package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
	for _, args := range [][]string{{}, {"-strict", "maybe", "hi"}, {"-nope"}} {
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
	getenv := func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "local"}[k]
	}
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
