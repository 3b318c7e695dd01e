package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestExecuteBudgetCutsFailures is an attack: the result budget cut a
// successful output, but a failure went to the model whole. A tool that
// fails with a long message (an imported MCP server's error body, a
// command's whole standard error, an error that quotes its input) put
// megabytes into the model's context, once per call of a batch. A
// failure's message and output are cut to the budget like an output.
// Control: a tool with no budget (WithMaxOutput(-1)) keeps its message.
func TestExecuteBudgetCutsFailures(t *testing.T) {
	const budget = 1000
	long := strings.Repeat("é", 1<<20) // 2 MiB
	errLong := errors.New(long)
	r := tool.NewRegistry(tool.WithDefaultMaxOutput(budget))
	for _, tl := range []tool.Tool{
		tool.Must(tool.New("fails", "Fails at length.", func(context.Context, struct{}) (string, error) {
			return "", errLong
		})),
		tool.Must(tool.New("marks", "Marks its result failed.", func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{IsError: true, Error: long, Output: long}, nil
		})),
		tool.Must(tool.New("unbudgeted", "Fails at length.", func(context.Context, struct{}) (string, error) {
			return "", errLong
		}, tool.WithMaxOutput(-1))),
	} {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string) (tool.Result, error) {
		outs, _ := tool.NewExecutor(r).Run(context.Background(), []tool.Call{{ID: "c", Name: name}})
		return outs[0].Result, outs[0].Err
	}
	res, err := run("unbudgeted")
	if res.Error != long || !errors.Is(err, errLong) {
		t.Fatalf("control: a tool without a budget failed with %d bytes, err %v", len(res.Error), err)
	}
	for _, name := range []string{"fails", "marks"} {
		res, err := run(name)
		if !res.IsError || res.Kind != tool.KindToolError {
			t.Fatalf("%s: %+v, want a tool_error", name, res.Kind)
		}
		for field, s := range map[string]string{"Error": res.Error, "Output": res.Output} {
			if len(s) > budget+300 {
				t.Errorf("%s: Result.%s has %d bytes, want the budget of %d and a notice", name, field, len(s), budget)
			}
		}
		if !strings.Contains(res.Error, "truncated") || !strings.HasPrefix(res.Error, "éé") {
			t.Errorf("%s: Error = %.80q…, want its start and a notice that it was cut", name, res.Error)
		}
		if name == "fails" && !errors.Is(err, errLong) {
			t.Errorf("%s: err = %.80v, want the tool's own error for the program", name, err)
		}
	}
}

// TestExecuteBudgetCountsTextResources is an attack: the budget bounds the
// text a model reads, but a text resource part is text too, and it was not
// counted. A tool (an imported MCP server, say) that returned its 2 MiB
// answer as a text resource instead of as Output sent all of it: OpenAI and
// Gemini results carry Result.Text(), the parts' text included. The text
// of text resources now shares the budget with Output, cut in order with a
// notice. Control: without a budget the part keeps its text.
func TestExecuteBudgetCountsTextResources(t *testing.T) {
	const budget = 1000
	long := strings.Repeat("é", 1<<20) // 2 MiB
	r := tool.NewRegistry(tool.WithDefaultMaxOutput(budget))
	for _, tl := range []tool.Tool{
		tool.Must(tool.New("resources", "Answers in text resources.", func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{Output: "see the files", Parts: []tool.Part{
				tool.TextResource("file:///a", "text/plain", long),
				tool.Image("image/png", []byte("png")),
				tool.TextResource("file:///b", "text/plain", long),
			}}, nil
		})),
		tool.Must(tool.New("unbudgeted", "Answers in a text resource.", func(context.Context, struct{}) (tool.Result, error) {
			return tool.Result{Parts: []tool.Part{tool.TextResource("file:///a", "text/plain", long)}}, nil
		}, tool.WithMaxOutput(-1))),
	} {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	if res := r.Execute(context.Background(), "unbudgeted", nil); len(res.Parts) != 1 || res.Parts[0].Text != long {
		t.Fatalf("control: a tool without a budget: %d parts, first with %d bytes of text", len(res.Parts), len(res.Parts[0].Text))
	}
	res := r.Execute(context.Background(), "resources", nil)
	if res.IsError || len(res.Parts) != 3 {
		t.Fatalf("result %+v with %d parts, want a success with its 3 parts", res.Kind, len(res.Parts))
	}
	if text := res.Text(); len(text) > budget+600 {
		t.Errorf("Result.Text() has %d bytes, want about the budget of %d", len(text), budget)
	}
	if !strings.HasPrefix(res.Parts[0].Text, "éé") || !strings.Contains(res.Parts[0].Text, "truncated") {
		t.Errorf("first resource = %.60q…, want its start and a notice that it was cut", res.Parts[0].Text)
	}
	if string(res.Parts[1].Data) != "png" {
		t.Errorf("the image part was changed: %+v", res.Parts[1])
	}
	if err := res.Parts[2].Validate(); err != nil {
		t.Errorf("the last resource, past the budget, is malformed: %v", err)
	}
}

// TestExecuteBudgetCountsPartMetadata: the result budget cut Output and
// the text of text resources, but not the rest of what Result.Text puts
// before the model: a resource link's description, name and URI, each
// part's MIME type, and a line per part. One link with a 2 MiB
// description, 100,000 one-byte images (2.6 MB of "[image …]" lines) or
// 100,000 small text resources (each past the budget given its own
// notice: 13 MB) all went whole past a 1,000-byte budget. Now the parts'
// own text is charged to a second allowance of the budget's size (at
// least 4 KiB), and the
// parts past it are dropped, counted in Metadata["parts_dropped"] and
// named in a notice after Output. Controls: the same tools without a
// budget return every byte.
func TestExecuteBudgetCountsPartMetadata(t *testing.T) {
	const budget = 1000
	many := func(p tool.Part) []tool.Part {
		ps := make([]tool.Part, 100_000)
		for i := range ps {
			ps[i] = p
		}
		return ps
	}
	cases := []struct {
		name  string
		parts []tool.Part
	}{
		{"long link description", []tool.Part{{Type: tool.PartResourceLink, URI: "file:///a", Name: "a", Description: strings.Repeat("d", 2<<20)}}},
		{"long link name and URI", []tool.Part{tool.ResourceLink("file:///"+strings.Repeat("u", 1<<20), strings.Repeat("n", 1<<20))}},
		{"many images", many(tool.Image("image/png", []byte("p")))},
		{"many text resources", many(tool.TextResource("file:///r", "text/plain", strings.Repeat("r", 1000)))},
		{"long MIME type", []tool.Part{tool.Image("image/"+strings.Repeat("m", 1<<20), []byte("p"))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fn := func(context.Context, struct{}) (tool.Result, error) {
				return tool.Result{Output: "see the parts", Parts: c.parts}, nil
			}
			r := tool.NewRegistry(tool.WithDefaultMaxOutput(budget))
			if err := r.Register(tool.Must(tool.New("parts", "Answers in parts.", fn))); err != nil {
				t.Fatal(err)
			}
			if err := r.Register(tool.Must(tool.New("unbudgeted", "Answers in parts.", fn, tool.WithMaxOutput(-1)))); err != nil {
				t.Fatal(err)
			}
			if res := r.Execute(context.Background(), "unbudgeted", nil); len(res.Text()) < 1<<20 {
				t.Fatalf("control: without a budget the parts read as %d bytes", len(res.Text()))
			}
			res := r.Execute(context.Background(), "parts", nil)
			if res.IsError {
				t.Fatalf("the call failed: %s", res.Error)
			}
			// The budget, and the parts' allowance: the budget's size, at
			// least 4 KiB.
			if n := len(res.Text()); n > budget+4<<10+300 {
				t.Errorf("Result.Text() has %d bytes, want at most the budget of %d and the parts' 4 KiB", n, budget)
			}
			for i, p := range res.Parts {
				if err := p.Validate(); err != nil {
					t.Fatalf("part %d kept malformed: %v", i, err)
				}
			}
			if dropped, _ := res.Metadata["parts_dropped"].(int); dropped == 0 || !strings.Contains(res.Output, "not shown") {
				t.Errorf("parts_dropped = %v, output %q: want the dropped parts counted and named", res.Metadata["parts_dropped"], res.Output)
			}
		})
	}
}
