package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// rawTool is a hand-written tool for the tests: a schema and a function.
type rawTool struct {
	name, desc string
	schema     string
	fn         func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (t *rawTool) Name() string                { return t.name }
func (t *rawTool) Description() string         { return t.desc }
func (t *rawTool) Parameters() json.RawMessage { return json.RawMessage(t.schema) }
func (t *rawTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.fn(ctx, args)
}

const orderSchema = `{
	"type": "object",
	"properties": {
		"customer": {"type": "string", "minLength": 1, "description": "who the pizza is for"},
		"pizza": {
			"type": "object",
			"properties": {
				"size": {"type": "string", "enum": ["small", "medium", "large"]},
				"toppings": {"type": "array", "items": {"type": "string", "minLength": 2}},
				"extra_cheese": {"type": "boolean", "default": false}
			},
			"required": ["size"],
			"additionalProperties": false
		},
		"quantity": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
	},
	"required": ["customer", "pizza"],
	"additionalProperties": false
}`

// treeSchema is recursive, through a local reference.
const treeSchema = `{
	"type": "object",
	"properties": {"root": {"$ref": "#/$defs/node"}},
	"required": ["root"],
	"$defs": {"node": {
		"type": "object",
		"properties": {
			"label": {"type": "string"},
			"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
		},
		"required": ["label"]
	}}
}`

// testPNG is a small picture: a red square with a blue stripe.
func testPNG(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 48, 48))
	for y := range 48 {
		for x := range 48 {
			c := color.RGBA{200, 30, 30, 255}
			if y > 20 && y < 28 {
				c = color.RGBA{30, 60, 200, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testRegistry returns the tools the handler and browser tests use:
// order (nested object, enum, array, defaults), picture (an image, audio
// and a resource link), slow (progress and log messages), step (sleeps,
// may fail), flaky (fails once, then is retried) and sleepy (times out).
func testRegistry(t testing.TB) *tool.Registry {
	r := tool.NewRegistry()
	pic := testPNG(t)
	var flakyMu sync.Mutex
	flakySeen := map[string]bool{}
	tools := []tool.Tool{
		tool.With(&rawTool{name: "order", desc: "Orders a pizza.\nThe kitchen bakes it at once.", schema: orderSchema,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				var in struct {
					Customer string
					Pizza    struct {
						Size     string
						Toppings []string
					}
					Quantity int
				}
				if err := json.Unmarshal(args, &in); err != nil {
					return tool.Result{}, err
				}
				out, _ := json.Marshal(map[string]any{"customer": in.Customer, "size": in.Pizza.Size, "toppings": in.Pizza.Toppings, "price": map[string]any{"eur": 9.5}})
				return tool.Result{Output: "ordered a " + in.Pizza.Size + " pizza for " + in.Customer, Structured: out}, nil
			}}, tool.WithAnnotations(tool.Annotations{Title: "Order pizza", Destructive: true, OpenWorld: true})),
		tool.With(&rawTool{name: "picture", desc: "Draws a picture.", schema: `{"type":"object"}`,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				return tool.Result{Output: "a red square", Parts: []tool.Part{
					tool.Image("image/png", pic),
					tool.Audio("audio/wav", []byte("RIFF\x24\x00\x00\x00WAVEfmt ")),
					tool.ResourceLink("file:///tmp/square.png", "square.png"),
				}}, nil
			}}, tool.WithAnnotations(tool.Annotations{ReadOnly: true})),
		&rawTool{name: "slow", desc: "Reports progress three times and logs.", schema: `{"type":"object"}`,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				for i := 1; i <= 3; i++ {
					tool.ReportProgress(ctx, float64(i), 3, "step")
					tool.ClientLogger(ctx).Info("working", "step", i)
				}
				return tool.Result{Output: "done"}, nil
			}},
		tool.With(&rawTool{name: "step", desc: "Sleeps a little; fails when asked to.", schema: `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":1000},"fail":{"type":"boolean"}},"additionalProperties":false}`,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				var in struct {
					MS   int
					Fail bool
				}
				_ = json.Unmarshal(args, &in)
				select {
				case <-time.After(time.Duration(in.MS) * time.Millisecond):
				case <-ctx.Done():
					return tool.Result{}, ctx.Err()
				}
				if in.Fail {
					return tool.Result{}, errors.New("asked to fail")
				}
				return tool.Result{Output: "slept"}, nil
			}}, tool.WithMaxInFlight(-1)),
		tool.With(&rawTool{name: "flaky", desc: "Fails the first time for each key.", schema: `{"type":"object","properties":{"key":{"type":"string"}}}`,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				flakyMu.Lock()
				defer flakyMu.Unlock()
				k := string(args)
				if !flakySeen[k] {
					flakySeen[k] = true
					return tool.Result{}, tool.Transient(errors.New("busy, try again"))
				}
				return tool.Result{Output: "fine"}, nil
			}}, tool.WithAnnotations(tool.Annotations{Idempotent: true}), tool.WithRetry(tool.RetryPolicy{MaxAttempts: 3, Backoff: time.Millisecond, MaxBackoff: time.Millisecond})),
		&rawTool{name: "tree", desc: "Counts the nodes of a tree.", schema: treeSchema,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				return tool.Result{Output: strings.TrimSpace(strings.Repeat("node ", strings.Count(string(args), `"label"`)))}, nil
			}},
		tool.With(&rawTool{name: "sleepy", desc: "Waits until its time limit runs out.", schema: `{"type":"object"}`,
			fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}}, tool.WithTimeout(10*time.Millisecond)),
	}
	for _, tl := range tools {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// sixCalls is a batch of six calls with dependencies: a; b and c after a
// (c is retried once); d fails; e waits for d and is skipped; f waits for
// b and c.
const sixCalls = `[
 {"id":"a","name":"step","args":{"ms":30}},
 {"id":"b","name":"step","args":{"ms":20},"depends_on":["a"]},
 {"id":"c","name":"flaky","args":{"key":"c"},"depends_on":["a"]},
 {"id":"d","name":"step","args":{"fail":true}},
 {"id":"e","name":"step","args":{},"depends_on":["d"]},
 {"id":"f","name":"step","args":{"ms":10},"depends_on":["b","c"]}
]`
