package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// partsTool returns a tool built with New whose function returns a Result
// carrying the given parts after the text "look:".
func partsTool(t *testing.T, parts ...tool.Part) *tool.Registry {
	t.Helper()
	// A budget of 16 bytes: more than "look:" and the text resources
	// below (which share it), less than the image.
	r := tool.NewRegistry(tool.WithDefaultMaxOutput(16))
	must(t, r.Register(tool.Must(tool.New("show", "Shows things.",
		func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{Output: "look:", Parts: parts}, nil
		}))))
	return r
}

// TestExecuteParts checks that well-formed parts pass Execute as they are,
// binary ones uncut by the result budget (text resources within it share
// it: TestExecuteBudgetCountsTextResources), and that a malformed part turns the call
// into a tool_error naming the part and what it lacks.
func TestExecuteParts(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n-pretend-this-is-a-long-image")
	for _, tt := range []struct {
		name    string
		parts   []tool.Part
		wantErr string // "" for a success
	}{
		{"image", []tool.Part{tool.Image("image/png", png)}, ""},
		{"audio", []tool.Part{tool.Audio("audio/wav", []byte("RIFF"))}, ""},
		{"text resource", []tool.Part{tool.TextResource("file:///a.txt", "text/plain", "hello")}, ""},
		{"empty text resource", []tool.Part{tool.TextResource("file:///a.txt", "text/plain", "")}, "part 0: a resource needs its contents in text or data"},
		{"blob resource", []tool.Part{tool.BlobResource("file:///a.bin", "application/octet-stream", []byte{0})}, ""},
		{"link", []tool.Part{tool.ResourceLink("file:///a.txt", "a.txt")}, ""},
		{"mixed", []tool.Part{tool.Image("image/png", png), tool.TextResource("x:y", "text/plain", "z")}, ""},
		{"image without MIME type", []tool.Part{tool.Image("", png)}, `part 0: an image part needs a MIME type of the form image/…, not ""`},
		{"image with audio type", []tool.Part{tool.Image("audio/wav", png)}, `part 0: an image part needs a MIME type of the form image/…, not "audio/wav"`},
		{"image type without subtype", []tool.Part{tool.Image("image/", png)}, `not "image/"`},
		{"audio without data", []tool.Part{tool.Audio("audio/wav", nil)}, "part 0: an audio part needs data"},
		{"resource without URI", []tool.Part{tool.TextResource("", "text/plain", "x")}, "part 0: a resource needs a URI"},
		{"resource with both", []tool.Part{{Type: tool.PartResource, URI: "x:y", Text: "a", Data: []byte("b")}}, "text or data, not both"},
		{"link without name", []tool.Part{tool.ResourceLink("x:y", "")}, "part 0: a resource link needs a name"},
		{"link without URI", []tool.Part{tool.ResourceLink("", "n")}, "part 0: a resource link needs a URI"},
		{"no type", []tool.Part{{Text: "x"}}, "part 0: a part needs a type"},
		{"unknown type", []tool.Part{{Type: "video"}}, `part 0: unknown part type "video" (known: image, audio, resource, resource_link)`},
		{"second part bad", []tool.Part{tool.Image("image/png", png), {Type: "video"}}, "part 1: unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := partsTool(t, tt.parts...)
			res := r.Execute(context.Background(), "show", nil)
			if tt.wantErr == "" {
				if res.IsError {
					t.Fatalf("Execute = %+v; want a success", res)
				}
				if res.Output != "look:" || len(res.Parts) != len(tt.parts) {
					t.Fatalf("Execute = %+v; want Output %q and %d parts", res, "look:", len(tt.parts))
				}
				for i := range tt.parts {
					if got, want := fmt.Sprint(res.Parts[i]), fmt.Sprint(tt.parts[i]); got != want || string(res.Parts[i].Data) != string(tt.parts[i].Data) {
						t.Errorf("part %d = %s, want %s", i, got, want)
					}
				}
				return
			}
			if !res.IsError || res.Kind != tool.KindToolError || len(res.Parts) != 0 {
				t.Fatalf("Execute = %+v; want a tool_error without parts", res)
			}
			var verr error
			for _, p := range tt.parts {
				verr = errors.Join(verr, p.Validate())
			}
			if verr == nil || !strings.Contains(res.Error, verr.Error()) {
				t.Errorf("Validate of the parts = %v; want the message of the result %q", verr, res.Error)
			}
			want := `tool "show" returned a malformed result: `
			if !strings.HasPrefix(res.Error, want) || !strings.Contains(res.Error, tt.wantErr) {
				t.Errorf("Error = %q, want %q…%q", res.Error, want, tt.wantErr)
			}
		})
	}
}

// TestExecuteFailedResultKeepsKind checks that a function returning a
// Result marks its own failure, kind included, and that its error wins
// over a Result it returns with it.
func TestExecuteFailedResultKeepsKind(t *testing.T) {
	r := tool.NewRegistry()
	must(t, r.Register(tool.Must(tool.New("deny", "Refuses.",
		func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{IsError: true, Kind: tool.KindDenied, Error: "not for you"}, nil
		}))))
	must(t, r.Register(tool.Must(tool.New("fail", "Fails.",
		func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{Output: "ignored"}, errors.New("boom")
		}))))
	if res := r.Execute(context.Background(), "deny", nil); !res.IsError || res.Kind != tool.KindDenied || res.Error != "not for you" {
		t.Errorf("deny = %+v", res)
	}
	if res := r.Execute(context.Background(), "fail", nil); !res.IsError || res.Kind != tool.KindToolError || res.Error != "boom" || res.Output != "" {
		t.Errorf("fail = %+v", res)
	}
	deny, _ := r.Get("deny")
	if s := tool.OptionsOf(deny).OutputSchema; s != nil {
		t.Errorf("a Result-returning tool has output schema %s, want none", s)
	}
}

// TestResultText checks the text-only rendering of results with parts.
func TestResultText(t *testing.T) {
	for _, tt := range []struct {
		res  tool.Result
		want string
	}{
		{tool.Result{Output: "plain"}, "plain"},
		{tool.Result{}, ""},
		{tool.Result{Output: "a chart:", Parts: []tool.Part{tool.Image("image/png", make([]byte, 68))}}, "a chart:\n[image image/png, 68 bytes]"},
		{tool.Result{Parts: []tool.Part{tool.Audio("audio/wav", make([]byte, 3))}}, "[audio audio/wav, 3 bytes]"},
		{tool.Result{Parts: []tool.Part{tool.TextResource("file:///n.txt", "text/plain", "line 1\nline 2")}}, "[resource file:///n.txt text/plain]\nline 1\nline 2"},
		{tool.Result{Parts: []tool.Part{tool.BlobResource("file:///b", "application/pdf", make([]byte, 10))}}, "[resource file:///b application/pdf, 10 bytes]"},
		{tool.Result{Output: "see", Parts: []tool.Part{{Type: tool.PartResourceLink, URI: "https://x.test/r", Name: "r", Description: "the report"}}}, "see\n[resource link r: https://x.test/r] the report"},
		{tool.Result{Parts: []tool.Part{{Type: "video"}}}, "[video part]"},
	} {
		if got := tt.res.Text(); got != tt.want {
			t.Errorf("%+v.Text() = %q, want %q", tt.res, got, tt.want)
		}
	}
}

// TestResultJSONParts checks the JSON form of a result with parts: data in
// base64, empty fields left out, and a round trip that loses nothing.
func TestResultJSONParts(t *testing.T) {
	res := tool.Result{Output: "x", Parts: []tool.Part{tool.Image("image/png", []byte{1, 2, 3}), tool.ResourceLink("file:///a", "a")}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"output":"x","error":"","is_error":false,"parts":[{"type":"image","mime_type":"image/png","data":"AQID"},{"type":"resource_link","uri":"file:///a","name":"a"}]}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
	var back tool.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Text(); got != res.Text() || string(back.Parts[0].Data) != "\x01\x02\x03" {
		t.Errorf("round trip = %+v, want %+v", back, res)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A tool that draws returns its picture as a Part after its text. MCP
// clients and Anthropic receive the image; text-only readers get Text.
func ExampleImage() {
	chart := tool.Must(tool.New("chart", "Draws a bar chart of the values.",
		func(ctx context.Context, in struct {
			Values []float64 `json:"values"`
		}) (tool.Result, error) {
			png := []byte("\x89PNG\r\n\x1a\n") // a real tool renders the chart here
			return tool.Result{
				Output: fmt.Sprintf("a bar chart of %d values", len(in.Values)),
				Parts:  []tool.Part{tool.Image("image/png", png)},
			}, nil
		}))
	r := tool.NewRegistry()
	if err := r.Register(chart); err != nil {
		panic(err)
	}
	res := r.Execute(context.Background(), "chart", json.RawMessage(`{"values":[3,1,2]}`))
	fmt.Println(res.Text())
	// Output:
	// a bar chart of 3 values
	// [image image/png, 8 bytes]
}
