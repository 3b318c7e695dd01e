package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool"
)

// Hand-written tools for the tests; they do not depend on tool.New.

// echo returns its text argument.
type echo struct{}

func (echo) Name() string        { return "echo" }
func (echo) Description() string { return "Echoes the text back." }
func (echo) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"],"additionalProperties":false}`)
}
func (echo) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: in.Text}, nil
}

// add returns {"sum":a+b} as structured content and declares its output
// schema and annotations.
type add struct{}

func (add) Name() string        { return "add" }
func (add) Description() string { return "Adds two integers." }
func (add) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}`)
}
func (add) Options() tool.Options {
	return tool.Options{
		Annotations:  tool.Annotations{Title: "Add", ReadOnly: true, Idempotent: true},
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`),
	}
}
func (add) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ A, B int }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	if in.A < 0 && in.B < 0 {
		return tool.Result{}, fmt.Errorf("both addends are negative")
	}
	s := fmt.Sprintf(`{"sum":%d}`, in.A+in.B)
	return tool.Result{Output: s, Structured: json.RawMessage(s)}, nil
}

// words returns a JSON array, so its output schema is not an object.
type words struct{}

func (words) Name() string                { return "words" }
func (words) Description() string         { return "Splits text into words." }
func (words) Parameters() json.RawMessage { return echo{}.Parameters() }
func (words) Options() tool.Options {
	return tool.Options{OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)}
}
func (words) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	b, _ := json.Marshal(strings.Fields(in.Text))
	return tool.Result{Output: string(b), Structured: b}, nil
}

// slow reports progress three times, then waits until release is closed
// or its context ends, and tells started and stopped about it.
type slow struct {
	started chan struct{}
	release chan struct{}
	stopped chan error // ctx.Err() when the context ended, nil when released
}

func newSlow() *slow {
	return &slow{started: make(chan struct{}, 1), release: make(chan struct{}), stopped: make(chan error, 1)}
}

func (*slow) Name() string                { return "slow" }
func (*slow) Description() string         { return "Works until told to stop, reporting progress." }
func (*slow) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s *slow) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	for i := 1; i <= 3; i++ {
		tool.ReportProgress(ctx, float64(i), 3, fmt.Sprintf("step %d", i))
	}
	tool.ReportProgress(ctx, 2, 3, "not increasing: dropped")
	s.started <- struct{}{}
	select {
	case <-s.release:
		s.stopped <- nil
		return tool.Result{Output: "done"}, nil
	case <-ctx.Done():
		s.stopped <- ctx.Err()
		return tool.Result{}, ctx.Err()
	}
}

// named is a tool with a given name and an empty object schema.
type named string

func (n named) Name() string                { return string(n) }
func (n named) Description() string         { return "Tool " + string(n) + "." }
func (n named) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (n named) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: string(n)}, nil
}

// media returns text followed by one part of every type.
type media struct{}

// mediaParts are the parts media returns: a 1×1 PNG, a WAV header, a text
// and a binary resource, and a link.
var mediaParts = []tool.Part{
	tool.Image("image/png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01")),
	tool.Audio("audio/wav", []byte("RIFF$\x00\x00\x00WAVEfmt ")),
	tool.TextResource("test://notes.txt", "text/plain", "line 1\nline 2"),
	tool.BlobResource("test://data.bin", "application/octet-stream", []byte{0, 1, 2, 255}),
	{Type: tool.PartResourceLink, URI: "test://report.pdf", Name: "report.pdf", MIMEType: "application/pdf", Description: "The report."},
}

func (media) Name() string                { return "media" }
func (media) Description() string         { return "Returns text, an image, audio and resources." }
func (media) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (media) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: "here:", Parts: mediaParts}, nil
}

func newRegistry(tools ...tool.Tool) *tool.Registry {
	r := tool.NewRegistry()
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
	return r
}
