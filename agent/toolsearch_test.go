package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/miniopenclaw/tool/toolsearch"
)

// bigRegistry holds weather, convert_temperature and enough unrelated
// tools to pass the default deferral threshold.
func bigRegistry(t *testing.T) *tool.Registry {
	t.Helper()
	r := registry(t, weather{})
	topics := []string{"invoice", "calendar", "repository", "spreadsheet", "playlist", "ticket", "bucket"}
	verbs := []string{"create", "list", "delete", "update", "archive"}
	for _, topic := range topics {
		for _, verb := range verbs {
			name := verb + "_" + topic
			desc := fmt.Sprintf("%s a %s.", verb, topic)
			if err := r.Register(echotool.New(name, desc, `{"type":"object","properties":{"id":{"type":"string"}}}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r.Len() <= toolsearch.DefaultThreshold {
		t.Fatalf("registry of %d tools is not over the threshold", r.Len())
	}
	return r
}

func TestToolSearch(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  API
	}{
		{"openai_tool_search", ChatCompletions},
		{"anthropic_tool_search", Messages},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, check := replay(t, tt.name, tt.api)
			var rec record
			a := New(model(t, tt.api, srv), bigRegistry(t), WithObserver(rec.observe),
				WithToolSearch(toolsearch.Loading{Always: []string{"convert_temperature"}}))
			defer a.Close()
			answer, err := a.Run(context.Background(), "What is the weather in Paris?")
			check()
			if err != nil {
				t.Fatal(err)
			}
			if answer != "It is 18°C in Paris." {
				t.Errorf("answer = %q", answer)
			}
			res := rec.results()
			if len(res) != 2 {
				t.Fatalf("got %d results, want the search's and the weather's", len(res))
			}
			if got := toolsearch.Loaded(res[0].Result); !slices.Equal(got, []string{"weather"}) {
				t.Errorf("search found %q, want weather", got)
			}
			if res[1].Result.IsError || res[1].Result.Output != "Paris: 18°C" {
				t.Errorf("weather result = %+v", res[1].Result)
			}
		})
	}
}

func TestServerToolSearch(t *testing.T) {
	srv, check := replay(t, "anthropic_server_tool_search", Messages)
	var rec record
	a := New(model(t, Messages, srv), bigRegistry(t), WithObserver(rec.observe),
		WithToolSearch(toolsearch.Loading{Always: []string{"convert_temperature"}}),
		WithServerToolSearch(anthropictool.ToolSearchBM25))
	defer a.Close()
	answer, err := a.Run(context.Background(), "What is the weather in Paris?")
	check()
	if err != nil {
		t.Fatal(err)
	}
	if answer != "It is 18°C in Paris." {
		t.Errorf("answer = %q", answer)
	}
	res := rec.results()
	if len(res) != 1 || res[0].Result.Output != "Paris: 18°C" {
		t.Errorf("results = %+v, want the weather call's only", res)
	}
}

func TestToolSearchBelowThreshold(t *testing.T) {
	a := New(OpenAI("http://127.0.0.1:1/v1", "k", "m"), registry(t, weather{}))
	tools, d := a.plan()
	if d != nil || len(tools) != 2 {
		t.Errorf("a registry of 2 tools is deferred: %d tools sent, deferral %v", len(tools), d)
	}
	a = New(OpenAI("http://127.0.0.1:1/v1", "k", "m"), bigRegistry(t), WithToolSearch(toolsearch.Loading{Threshold: -1}))
	if tools, d := a.plan(); d != nil || len(tools) != bigRegistry(t).Len() {
		t.Errorf("Threshold -1 deferred tools: %d sent", len(tools))
	}
	a.Close() // no index was made; Close is harmless
}

// chatStreamCall is a streamed Chat Completions reply that calls name.
func chatStreamCall(id, name, args string) []string {
	return []string{
		chatChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + strconv.Quote(args) + `}}]}`),
		chatFinish("tool_calls"),
		data("[DONE]"),
	}
}

// chatStreamText is a streamed Chat Completions reply of text only.
func chatStreamText(text string) []string {
	return []string{chatChunk(`{"role":"assistant","content":"` + text + `"}`), chatFinish("stop"), data("[DONE]")}
}

// toolNames returns the names in a Chat Completions request's tools.
func toolNames(req map[string]any) []string {
	var names []string
	tools, _ := req["tools"].([]any)
	for _, t := range tools {
		names = append(names, t.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return names
}

// A tool found by a search on a Session's first prompt stays callable on
// the next prompt, without a new search, with the replies streamed.
func TestToolSearchInSession(t *testing.T) {
	srv := newSSEServer(t,
		chatStreamCall("call_1", toolsearch.ToolName, `{"query":"weather in a city"}`),
		chatStreamCall("call_2", "weather", `{"city":"Paris"}`),
		chatStreamText("18°C in Paris."),
		chatStreamCall("call_3", "weather", `{"city":"Tokyo"}`),
		chatStreamText("9°C in Tokyo."),
	)
	var rec record
	var streamed strings.Builder
	a := New(model(t, ChatCompletions, srv.Server), bigRegistry(t), WithObserver(rec.observe),
		WithStream(func(s string) { streamed.WriteString(s) }),
		WithToolSearch(toolsearch.Loading{Always: []string{"convert_temperature"}}))
	defer a.Close()
	s := a.NewSession()
	for _, tt := range []struct{ prompt, answer string }{
		{"What is the weather in Paris?", "18°C in Paris."},
		{"And in Tokyo?", "9°C in Tokyo."},
	} {
		answer, err := s.Send(context.Background(), tt.prompt)
		if err != nil {
			t.Fatalf("Send(%q): %v", tt.prompt, err)
		}
		if answer != tt.answer {
			t.Errorf("Send(%q) = %q, want %q", tt.prompt, answer, tt.answer)
		}
	}
	if got := streamed.String(); got != "18°C in Paris.9°C in Tokyo." {
		t.Errorf("streamed text = %q", got)
	}
	if got, want := toolNames(srv.request(t, 0)), []string{"convert_temperature", toolsearch.ToolName}; !slices.Equal(got, want) {
		t.Errorf("first request's tools = %q, want %q", got, want)
	}
	loaded := []string{"convert_temperature", toolsearch.ToolName, "weather"}
	for _, i := range []int{1, 2, 3, 4} {
		if got := toolNames(srv.request(t, i)); !slices.Equal(got, loaded) {
			t.Errorf("request %d's tools = %q, want %q", i, got, loaded)
		}
	}
	res := rec.results()
	if len(res) != 3 {
		t.Fatalf("got %d results, want the search's and two weather calls'", len(res))
	}
	if got := toolsearch.Loaded(res[0].Result); !slices.Equal(got, []string{"weather"}) {
		t.Errorf("search found %q, want weather", got)
	}
	for i, want := range []string{"", "Paris: 18°C", "Tokyo: 9°C"} {
		if i > 0 && (res[i].Result.IsError || res[i].Result.Output != want) {
			t.Errorf("result %d = %+v, want %q", i, res[i].Result, want)
		}
	}
}

// A Send that fails after a search found a tool leaves the Session as it
// was: the tool is deferred again, not offered in the next request, and
// the next search finds it again.
func TestToolSearchSessionForgetsAFailedPrompt(t *testing.T) {
	srv := newSSEServer(t,
		chatStreamCall("call_1", toolsearch.ToolName, `{"query":"weather in a city"}`),
		nil, // an empty stream: the Send fails
		chatStreamCall("call_2", toolsearch.ToolName, `{"query":"weather in a city"}`),
		chatStreamCall("call_3", "weather", `{"city":"Lima"}`),
		chatStreamText("22°C in Lima."),
	)
	var rec record
	a := New(model(t, ChatCompletions, srv.Server), bigRegistry(t), WithObserver(rec.observe),
		WithStream(func(string) {}),
		WithToolSearch(toolsearch.Loading{Always: []string{"convert_temperature"}}))
	defer a.Close()
	s := a.NewSession()
	if _, err := s.Send(context.Background(), "What is the weather in Paris?"); err == nil {
		t.Fatal("Send over an empty stream succeeded")
	}
	answer, err := s.Send(context.Background(), "What is the weather in Lima?")
	if err != nil || answer != "22°C in Lima." {
		t.Fatalf("second Send = %q, %v", answer, err)
	}
	if got, want := toolNames(srv.request(t, 2)), []string{"convert_temperature", toolsearch.ToolName}; !slices.Equal(got, want) {
		t.Errorf("tools after the failed Send = %q, want %q", got, want)
	}
	if msgs := fmt.Sprint(srv.request(t, 2)["messages"]); strings.Contains(msgs, "Paris") {
		t.Errorf("the request after the failed Send carries its prompt: %s", msgs)
	}
	res := rec.results()
	if len(res) != 3 {
		t.Fatalf("got %d results, want two searches' and the weather's", len(res))
	}
	for i := range 2 {
		if got := toolsearch.Loaded(res[i].Result); !slices.Equal(got, []string{"weather"}) {
			t.Errorf("search %d found %q, want weather", i+1, got)
		}
	}
	if res[2].Result.IsError || res[2].Result.Output != "Lima: 22°C" {
		t.Errorf("weather result = %+v", res[2].Result)
	}
}
