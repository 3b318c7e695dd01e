package interop

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
)

// OPENAI_BASE_URL and ANTHROPIC_BASE_URL mean to the agent what they mean
// to the official SDKs, which read the same variables: given the same
// value, the SDK's client and the agent send their requests to the same
// path.
func TestBaseURLVariablesMatchSDKs(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(paths) == 0 {
			return ""
		}
		return paths[len(paths)-1]
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		env  map[string]string
		sdk  func() error
	}{
		{"openai", map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "k", "OPENAI_MODEL": "m"}, func() error {
			c := openai.NewClient(oaoption.WithMaxRetries(0))
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			return err
		}},
		{"anthropic", map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "k"}, func() error {
			c := anthropic.NewClient(option.WithMaxRetries(0))
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 16, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			return err
		}},
		{"anthropic behind a path prefix", map[string]string{"ANTHROPIC_BASE_URL": srv.URL + "/gateway/", "ANTHROPIC_API_KEY": "k"}, func() error {
			c := anthropic.NewClient(option.WithMaxRetries(0))
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 16, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL"} {
				t.Setenv(k, tt.env[k])
			}
			if err := tt.sdk(); err != nil {
				t.Fatalf("SDK: %v", err)
			}
			sdkPath := last()
			m, err := agent.FromEnv(os.Getenv, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := agent.New(m, tool.NewRegistry()).Run(ctx, "hi"); err != nil {
				t.Fatalf("agent: %v", err)
			}
			if got := last(); got != sdkPath {
				t.Errorf("the agent sent its request to %s, the SDK to %s", got, sdkPath)
			}
		})
	}
}
