package tooltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
)

// echo is a well-behaved hand-written tool: it decodes its arguments
// strictly enough not to panic, honours ctx and keeps no state.
type echo struct {
	name string
	// schema, when set, replaces the default parameters.
	schema string
	// exec, when set, replaces the default Execute.
	exec func(ctx context.Context, args json.RawMessage) (tool.Result, error)
	// params, when set, replaces Parameters.
	params func() json.RawMessage
	// desc, when set, replaces Description.
	desc func() string
}

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

func (e *echo) Name() string {
	if e.name != "" {
		return e.name
	}
	return "echo"
}

func (e *echo) Description() string {
	if e.desc != nil {
		return e.desc()
	}
	return "Returns its text."
}

func (e *echo) Parameters() json.RawMessage {
	if e.params != nil {
		return e.params()
	}
	if e.schema != "" {
		return json.RawMessage(e.schema)
	}
	return json.RawMessage(echoSchema)
}

func (e *echo) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if e.exec != nil {
		return e.exec(ctx, args)
	}
	return echoExecute(ctx, args)
}

func echoExecute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	if in.Text == nil {
		return tool.Result{}, errors.New("text is required")
	}
	return tool.Result{Output: *in.Text}, nil
}

// sleepIgnoringContext does 10 seconds of work that does not look at ctx:
// less than the bound for a call, more than the bound after cancellation.
func sleepIgnoringContext(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	time.Sleep(10 * time.Second)
	return echoExecute(context.Background(), args)
}

var validArgs = json.RawMessage(`{"text":"hi"}`)

func TestTestToolGood(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tool  tool.Tool
		valid json.RawMessage
	}{
		{"echo", &echo{}, validArgs},
		{"echo with options", tool.With(&echo{}, tool.WithTimeout(time.Second), tool.WithAnnotations(tool.Annotations{ReadOnly: true})), validArgs},
		{"no parameters", &echo{schema: `{"type":"object"}`, exec: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "ok"}, ctx.Err()
		}}, json.RawMessage(`{}`)},
		{"waits for its context", &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			select {
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			case <-time.After(time.Second):
				return echoExecute(ctx, args)
			}
		}}, validArgs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if err := TestTool(tt.tool, tt.valid); err != nil {
					t.Errorf("TestTool(%s) = %v, want nil", tt.name, err)
				}
				drain()
			})
		})
	}
}

func TestRunGood(t *testing.T) {
	Run(t, func(*testing.T) tool.Tool { return &echo{} }, validArgs)
}

// Each broken tool must be reported by exactly the checks listed.
func TestTestToolBroken(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	for _, tt := range []struct {
		name  string
		tool  tool.Tool
		valid json.RawMessage
		want  []string // the checks that must fail, in case order
	}{
		{
			name: "invalid name",
			tool: &echo{name: "get weather"},
			want: []string{"name"},
		},
		{
			name: "name too long",
			tool: &echo{name: strings.Repeat("a", 65)},
			want: []string{"name"},
		},
		{
			name: "blank description",
			tool: &echo{desc: func() string { return " \n" }},
			want: []string{"description"},
		},
		{
			name: "description panics",
			tool: &echo{desc: func() string { panic("no description") }},
			want: []string{"description", "parameters", "valid-args", "malformed-args", "concurrent"},
		},
		{
			name: "schema is not an object schema",
			tool: &echo{schema: `{"type":"string"}`},
			want: []string{"parameters"},
		},
		{
			name: "schema is not JSON",
			tool: &echo{schema: `{"type":"object",`},
			want: []string{"parameters"},
		},
		{
			name: "schema changes between calls",
			tool: &echo{params: func() json.RawMessage {
				mu.Lock()
				defer mu.Unlock()
				calls++
				return json.RawMessage(fmt.Sprintf(`{"type":"object","description":"call %d"}`, calls))
			}},
			want: []string{"parameters"},
		},
		{
			name: "output schema is not JSON",
			tool: tool.With(&echo{}, tool.WithOutputSchema(json.RawMessage(`{`))),
			want: []string{"parameters"},
		},
		{
			name:  "schema refuses validArgs",
			tool:  &echo{},
			valid: json.RawMessage(`{"txt":"hi"}`),
			want:  []string{"valid-args"},
		},
		{
			name: "panics on malformed arguments",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				var in map[string]any
				if err := json.Unmarshal(args, &in); err != nil {
					panic("cannot decode: " + err.Error())
				}
				return tool.Result{Output: in["text"].(string)}, nil
			}},
			want: []string{"malformed-args"},
		},
		{
			name: "error result without a message",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				if _, err := echoExecute(ctx, args); err != nil {
					return tool.Result{IsError: true}, nil
				}
				return tool.Result{Output: "ok"}, nil
			}},
			want: []string{"malformed-args"},
		},
		{
			name: "kind on a successful result",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				res, err := echoExecute(ctx, args)
				res.Kind = tool.KindToolError
				return res, err
			}},
			want: []string{"valid-args", "malformed-args"},
		},
		{
			name: "structured content is not JSON",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				res, err := echoExecute(ctx, args)
				if err == nil {
					res.Structured = json.RawMessage(`{"text":`)
				}
				return res, err
			}},
			want: []string{"valid-args", "malformed-args"},
		},
		{
			name: "malformed part",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				res, err := echoExecute(ctx, args)
				if err == nil {
					res.Parts = []tool.Part{tool.Image("", []byte{1})}
				}
				return res, err
			}},
			want: []string{"valid-args", "malformed-args"},
		},
		{
			name: "ignores its context",
			tool: &echo{exec: sleepIgnoringContext},
			want: []string{"canceled-context"},
		},
		{
			name: "looks at its context only before it starts",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				if err := ctx.Err(); err != nil {
					return tool.Result{}, err
				}
				return sleepIgnoringContext(ctx, args)
			}},
			want: []string{"canceled-context"},
		},
		{
			name: "hangs",
			tool: &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				time.Sleep(time.Hour)
				return tool.Result{}, nil
			}},
			want: []string{"valid-args", "malformed-args", "canceled-context", "concurrent"},
		},
		{
			name: "not safe for concurrent use",
			tool: func() tool.Tool {
				var busy sync.Mutex
				return &echo{exec: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
					if !busy.TryLock() {
						panic("called concurrently")
					}
					defer busy.Unlock()
					time.Sleep(time.Millisecond)
					return echoExecute(ctx, args)
				}}
			}(),
			want: []string{"concurrent"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			valid := tt.valid
			if valid == nil {
				valid = validArgs
			}
			synctest.Test(t, func(t *testing.T) {
				err := TestTool(tt.tool, valid)
				drain()
				if got := failedChecks(err); !slices.Equal(got, tt.want) {
					t.Errorf("TestTool reported the checks %q, want %q; the error:\n%v", got, tt.want, err)
				}
			})
		})
	}
}

// drain lets the calls a check gave up on finish, in fake time: time stops
// in a bubble once its root goroutine returns, so they would never end.
func drain() {
	time.Sleep(2 * time.Hour)
	synctest.Wait()
}

// failedChecks returns the names of the checks that reported err, once
// each, in case order.
func failedChecks(err error) []string {
	var got []string
	if err == nil {
		return got
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var f *failure
		if !errors.As(e, &f) {
			got = append(got, "not a failure: "+e.Error())
			continue
		}
		if !slices.Contains(got, f.check) {
			got = append(got, f.check)
		}
	}
	return got
}

func TestTestToolMessages(t *testing.T) {
	err := TestTool(&echo{name: "get weather"}, validArgs)
	want := `tooltest: name: Name() = "get weather"; a tool name must match ^[a-zA-Z0-9_-]{1,64}$, the names every model API accepts`
	if err == nil || err.Error() != want {
		t.Errorf("TestTool(invalid name) = %v, want %s", err, want)
	}
}

func TestTestToolInvalidValidArgs(t *testing.T) {
	for _, args := range []string{``, `[]`, `null`, `"x"`, `{`} {
		err := TestTool(&echo{}, json.RawMessage(args))
		if err == nil || !strings.Contains(err.Error(), "validArgs must be a JSON object") {
			t.Errorf("TestTool(echo, %q) = %v, want an error about validArgs", args, err)
		}
	}
}

func TestMalformedInputsDuplicateKey(t *testing.T) {
	for _, tt := range []struct{ valid, want string }{
		{`{"text":"hi","n":1}`, `{"text":"hi","text":"hi","n":1}`},
		{` {"a\"b" : {"c":1}} `, `{"a\"b":{"c":1},"a\"b" : {"c":1}}`},
		{`{}`, `{"a":1,"a":1}`},
	} {
		i := slices.IndexFunc(malformedInputs(json.RawMessage(tt.valid)), func(m malformed) bool { return strings.Contains(m.name, "duplicate key") })
		if got := string(malformedInputs(json.RawMessage(tt.valid))[i].args); got != tt.want {
			t.Errorf("duplicate-key input for %s = %s, want %s", tt.valid, got, tt.want)
		}
	}
}

func TestMalformedInputsAreNotStrictJSON(t *testing.T) {
	// Each input must be refused by a strict parser whatever the schema:
	// check the ones encoding/json itself refuses, and that the rest are
	// the kinds it is known to accept.
	lenient := []string{"duplicate key", "top level", "invalid UTF-8", "lone surrogate", "size limit"}
	for _, in := range malformedInputs(json.RawMessage(`{"text":"hi"}`)) {
		if json.Valid(in.args) && !slices.ContainsFunc(lenient, func(s string) bool { return strings.Contains(in.name, s) }) {
			t.Errorf("%s: encoding/json accepts %.80q", in.name, in.args)
		}
	}
}
