package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

func TestTool(t *testing.T) {
	r := testRegistry(t, sample...)
	ix := New(r)
	defer ix.Close()
	meta := NewTool(ix, func(name string) bool { return name != "readFile" })
	if err := r.Register(meta); err != nil { // the index now holds the meta-tool too
		t.Fatal(err)
	}
	tests := []struct {
		args      string
		found     []string
		errorKind tool.ErrorKind
	}{
		{`{"query":"post a message to slack"}`, []string{"slack_post_message"}, ""},
		{`{"query":"^github_","regexp":true}`, []string{"github_create_issue"}, ""},
		{`{"query":"read file contents"}`, nil, ""}, // readFile is not visible
		{`{"query":"search tools"}`, nil, ""},       // never itself
		{`{"query":"a","limit":1000}`, nil, tool.KindInvalidArguments},
		{`{"query":""}`, nil, tool.KindInvalidArguments},
		{`{"query":"(","regexp":true}`, nil, tool.KindToolError},
		{`{"query":"` + strings.Repeat("x", 2000) + `"}`, nil, tool.KindInvalidArguments},
	}
	for _, tt := range tests {
		res := r.Execute(context.Background(), ToolName, json.RawMessage(tt.args))
		if res.Kind != tt.errorKind {
			t.Errorf("%.60s: kind %q, want %q (%s)", tt.args, res.Kind, tt.errorKind, res.Error)
			continue
		}
		if res.IsError {
			continue
		}
		got := Loaded(res)
		if len(got) > 0 || len(tt.found) > 0 {
			got = got[:min(len(got), len(tt.found))]
		}
		if !slices.Equal(got, tt.found) {
			t.Errorf("%s: found %q, want %q first", tt.args, Loaded(res), tt.found)
		}
		var out struct {
			Tools []Definition `json:"tools"`
		}
		if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
			t.Fatalf("output is not JSON: %v", err)
		}
		for i, d := range out.Tools {
			want, _ := r.Get(d.Name)
			if d.Name != Loaded(res)[i] || d.Description != want.Description() || !json.Valid(d.Parameters) {
				t.Errorf("definition %d = %+v", i, d)
			}
		}
	}
}

func TestLoadingSplit(t *testing.T) {
	tools := func(n int) []tool.Tool {
		var out []tool.Tool
		for i := range n {
			out = append(out, echotool.New(fmt.Sprintf("t%02d", i), "", `{"type":"object"}`))
		}
		return out
	}
	tests := []struct {
		name     string
		l        Loading
		n        int
		deferred int
	}{
		{"small registry", Loading{}, DefaultThreshold, 0},
		{"over the default threshold", Loading{}, DefaultThreshold + 1, DefaultThreshold + 1},
		{"always loaded", Loading{Always: []string{"t00", "t01"}}, 40, 38},
		{"own threshold", Loading{Threshold: 5}, 6, 6},
		{"named deferred", Loading{Deferred: []string{"t02"}}, 3, 1},
		{"never by count", Loading{Threshold: -1, Deferred: []string{"t02"}}, 100, 1},
		{"always wins", Loading{Always: []string{"t02"}, Deferred: []string{"t02"}}, 3, 0},
	}
	for _, tt := range tests {
		loaded, deferred := tt.l.Split(tools(tt.n))
		if len(deferred) != tt.deferred || len(loaded)+len(deferred) != tt.n {
			t.Errorf("%s: %d loaded, %d deferred; want %d deferred", tt.name, len(loaded), len(deferred), tt.deferred)
		}
	}
}

// TestNothingFitsAnswer: a request for a capability the tools lack gets
// "nothing fits" from the meta-tool, where without the confidence bound
// it got the one tool sharing a word with it.
func TestNothingFitsAnswer(t *testing.T) {
	tools := []tool.Tool{
		echotool.New("slack_post_message", "Post a message to a Slack channel.", `{"type":"object"}`),
		echotool.New("get_weather", "Current weather for a location.", `{"type":"object"}`),
	}
	query := `{"query":"book a flight to Paris for the message conference"}`
	for _, tt := range []struct {
		minConf float64
		found   []string
	}{
		{-1, []string{"slack_post_message"}}, // control: no bound, the least bad tool comes back
		{0, nil},                             // the default bound
	} {
		ix := NewWithOptions(testRegistry(t, tools...), Options{MinConfidence: tt.minConf})
		res, err := NewTool(ix, nil).Execute(context.Background(), json.RawMessage(query))
		ix.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := Loaded(res); !slices.Equal(got, tt.found) {
			t.Errorf("MinConfidence %v: found %v, want %v", tt.minConf, got, tt.found)
		}
		var out struct {
			NothingFits bool `json:"nothing_fits"`
			Note        string
		}
		if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
			t.Fatal(err)
		}
		if want := tt.found == nil; out.NothingFits != want || want != strings.HasPrefix(out.Note, "Nothing fits") {
			t.Errorf("MinConfidence %v: nothing_fits %v, note %q; want nothing_fits %v", tt.minConf, out.NothingFits, out.Note, want)
		}
	}
}
