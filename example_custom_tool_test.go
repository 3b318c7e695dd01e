package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
)

// Notes is a hand-written, stateful tool: it keeps notes in memory. It
// implements Tool itself, with a hand-written schema that the Registry
// compiles once and checks every call against, and Configured to declare
// its annotations and a timeout.
type Notes struct {
	mu    sync.Mutex
	notes map[string]string
}

// Name implements Tool.
func (n *Notes) Name() string { return "notes" }

// Description implements Tool.
func (n *Notes) Description() string {
	return "Keeps short notes: add one under a title, or list the titles."
}

// Parameters implements Tool.
func (n *Notes) Parameters() json.RawMessage {
	return json.RawMessage(`{
		"type": "object",
		"properties": {
			"op":    {"type": "string", "enum": ["add", "list"]},
			"title": {"type": "string", "minLength": 1, "maxLength": 40},
			"text":  {"type": "string", "maxLength": 500}
		},
		"required": ["op"],
		"additionalProperties": false
	}`)
}

// Execute implements Tool. The Registry has validated args already, so
// decoding them cannot fail on types; the tool still checks what the schema
// cannot say (an add needs a title).
func (n *Notes) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Op, Title, Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch in.Op {
	case "add":
		if in.Title == "" {
			return tool.Result{}, fmt.Errorf("add needs a title")
		}
		if n.notes == nil {
			n.notes = map[string]string{}
		}
		n.notes[in.Title] = in.Text
		return tool.Result{Output: "saved " + in.Title}, nil
	default:
		titles := make([]string, 0, len(n.notes))
		for t := range n.notes {
			titles = append(titles, t)
		}
		sort.Strings(titles)
		return tool.Result{Output: strings.Join(titles, "\n")}, nil
	}
}

// Options implements Configured.
func (n *Notes) Options() tool.Options {
	return tool.Options{
		Annotations: tool.Annotations{Title: "Notes", Idempotent: true},
		Timeout:     time.Second,
	}
}

func Example_customTool() {
	r := tool.NewRegistry()
	if err := r.Register(&Notes{}); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, args := range []string{
		`{"op":"add","title":"milk","text":"2 litres"}`,
		`{"op":"add","title":"bread"}`,
		`{"op":"list"}`,
		`{"op":"add"}`,
		`{"op":"remove","title":"milk"}`,
	} {
		res := r.Execute(ctx, "notes", []byte(args))
		if res.IsError {
			fmt.Printf("error (%s): %s\n", res.Kind, strings.SplitN(res.Error, "\n", 2)[0])
			continue
		}
		fmt.Printf("%q\n", res.Output)
	}
	// Output:
	// "saved milk"
	// "saved bread"
	// "bread\nmilk"
	// error (tool_error): add needs a title
	// error (invalid_arguments): invalid arguments for tool "notes": /op: expected one of "add", "list", got "remove"
}
