package agent

import (
	"context"
	"fmt"
	"slices"
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
