package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// authFunc adapts a function to tool.Authorizer.
type authFunc func(ctx context.Context, req tool.AccessRequest) error

func (f authFunc) Authorize(ctx context.Context, req tool.AccessRequest) error { return f(ctx, req) }

// authHandTool is a tool with a hand-written schema.
type authHandTool struct {
	name, params string
	fn           func(ctx context.Context, args json.RawMessage) (tool.Result, error)
}

func (h authHandTool) Name() string                { return h.name }
func (h authHandTool) Description() string         { return h.name }
func (h authHandTool) Parameters() json.RawMessage { return json.RawMessage(h.params) }
func (h authHandTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return h.fn(ctx, args)
}

type withMeta struct{ msg string }

func (e withMeta) Error() string                  { return e.msg }
func (e withMeta) ResultMetadata() map[string]any { return map[string]any{"approval": "abc"} }

func TestAuthorizerSeesCheckedArguments(t *testing.T) {
	type in struct {
		Path  string `json:"path"`
		Depth int    `json:"depth,omitempty" default:"3"`
	}
	var ran atomic.Int32
	typed := tool.Must(tool.New("typed", "t", func(ctx context.Context, a in) (string, error) { ran.Add(1); return "ok", nil }))
	hand := authHandTool{"hand", `{"type":"object","properties":{"path":{"type":"string"},"depth":{"type":"integer","default":3}}}`,
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			ran.Add(1)
			return tool.Result{Output: "ok"}, nil
		}}
	var seen []string
	reg := tool.NewRegistry(tool.WithAuthorizer(authFunc(func(ctx context.Context, req tool.AccessRequest) error {
		seen = append(seen, req.Name+" "+string(req.Args))
		switch {
		case strings.Contains(string(req.Args), "secret"):
			return errors.New("you may not read secret paths; ask for a path under docs/")
		case strings.Contains(string(req.Args), "ask"):
			return withMeta{"this call needs an approval"}
		}
		return nil
	})))
	for _, tl := range []tool.Tool{typed, hand} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, tool, args string
		kind             tool.ErrorKind
		seen             string
	}{
		{"typed allowed with default", "typed", `{"path":"docs/a"}`, "", `typed {"path":"docs/a","depth":3}`},
		{"hand allowed with default", "hand", `{"path":"docs/a"}`, "", `hand {"path":"docs/a","depth":3}`},
		{"typed denied", "typed", `{"path":"secret"}`, tool.KindDenied, `typed {"path":"secret","depth":3}`},
		{"hand denied", "hand", `{"path":"secret"}`, tool.KindDenied, `hand {"path":"secret","depth":3}`},
		{"duplicate key never reaches the authorizer", "hand", `{"path":"docs","path":"secret"}`, tool.KindInvalidArguments, ""},
		{"case variant never reaches the authorizer", "hand", `{"PATH":"secret"}`, tool.KindInvalidArguments, ""},
		{"typed case variant", "typed", `{"Path":"secret"}`, tool.KindInvalidArguments, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran.Store(0)
			seen = nil
			res := reg.Execute(context.Background(), tt.tool, json.RawMessage(tt.args))
			if res.Kind != tt.kind {
				t.Fatalf("kind = %q, want %q (%s)", res.Kind, tt.kind, res.Error)
			}
			got := strings.Join(seen, ";")
			if got != tt.seen {
				t.Errorf("authorizer saw %q, want %q", got, tt.seen)
			}
			if want := int32(0); tt.kind != "" && ran.Load() != want {
				t.Errorf("tool ran %d times after refusal", ran.Load())
			}
		})
	}
	res := reg.Execute(context.Background(), "hand", json.RawMessage(`{"path":"ask"}`))
	if res.Kind != tool.KindDenied || res.Metadata["approval"] != "abc" || res.Error != "this call needs an approval" {
		t.Errorf("ask result = %+v", res)
	}
}

func TestAuthorizerCoversExecutor(t *testing.T) {
	reg := tool.NewRegistry(tool.WithAuthorizer(authFunc(func(ctx context.Context, req tool.AccessRequest) error {
		return errors.New("no")
	})))
	reg.Register(tool.Must(tool.New("t", "t", func(ctx context.Context, a struct{}) (string, error) { return "ok", nil })))
	out, err := tool.NewExecutor(reg).Run(context.Background(), []tool.Call{{ID: "1", Name: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Result.Kind != tool.KindDenied || !errors.Is(out[0].Err, tool.ErrDenied) {
		t.Errorf("outcome = %+v", out[0])
	}
}

func TestAuthorizerPanicRefuses(t *testing.T) {
	reg := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)), tool.WithAuthorizer(authFunc(func(ctx context.Context, req tool.AccessRequest) error {
		panic("bug")
	})))
	reg.Register(tool.Must(tool.New("t", "t", func(ctx context.Context, a struct{}) (string, error) { return "ok", nil })))
	if res := reg.Execute(context.Background(), "t", nil); res.Kind != tool.KindDenied {
		t.Errorf("result = %+v", res)
	}
}

func TestViewShowsAndRunsOnlyKeptTools(t *testing.T) {
	reg := tool.NewRegistry()
	for _, n := range []string{"read", "write", "delete"} {
		reg.Register(tool.Must(tool.New(n, n, func(ctx context.Context, a struct{}) (string, error) { return n, nil })))
	}
	v := reg.View(func(name string, _ tool.Options) bool { return name != "delete" })
	var names []string
	for _, tl := range v.List() {
		names = append(names, tl.Name())
	}
	if got := strings.Join(names, ","); got != "read,write" {
		t.Errorf("List = %s", got)
	}
	var defs []struct{ Function struct{ Name string } }
	if err := json.Unmarshal(v.Definitions(), &defs); err != nil || len(defs) != 2 || defs[1].Function.Name != "write" {
		t.Errorf("Definitions = %s (%v)", v.Definitions(), err)
	}
	if res := v.Execute(context.Background(), "delete", nil); res.Kind != tool.KindNotFound || strings.Contains(res.Error, "delete,") || strings.Contains(res.Error, "Available tools: delete") {
		t.Errorf("hidden tool: %+v", res)
	} else if !strings.Contains(res.Error, "read, write") {
		t.Errorf("hidden tool message lists %q", res.Error)
	}
	if res := v.Execute(context.Background(), "read", nil); res.IsError || res.Output != "read" {
		t.Errorf("visible tool: %+v", res)
	}
	if _, ok := v.Get("delete"); ok {
		t.Error("Get found a hidden tool")
	}
	if err := v.Require("read", "delete"); err == nil || !strings.Contains(err.Error(), `"delete"`) || !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("Require = %v", err)
	}
	if err := v.Require("read", "write"); err != nil {
		t.Errorf("Require = %v", err)
	}
}

func TestRegistryOnly(t *testing.T) {
	reg := tool.NewRegistry()
	for _, n := range []string{"read", "search", "write"} {
		reg.Register(tool.Must(tool.New(n, n, func(ctx context.Context, a struct{}) (string, error) { return n, nil })))
	}
	v, err := reg.Only("read", "search")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(v.List()); got != 2 {
		t.Errorf("view has %d tools", got)
	}
	if res := v.Execute(context.Background(), "write", nil); res.Kind != tool.KindNotFound {
		t.Errorf("write through the view: %+v", res)
	}
	if _, err := reg.Only("read", "summarize"); err == nil || !strings.Contains(err.Error(), `"summarize"`) || !errors.Is(err, tool.ErrNotFound) {
		t.Errorf("missing tool: %v", err)
	}
}

// outcomes allows every call and records how each ended.
type outcomes struct {
	mu    sync.Mutex
	kinds []string
}

func (o *outcomes) Authorize(ctx context.Context, req tool.AccessRequest) error {
	if strings.Contains(string(req.Args), "deny") {
		return errors.New("no")
	}
	return nil
}

func (o *outcomes) Outcome(ctx context.Context, req tool.AccessRequest, res tool.Result, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := "ok"
	if res.IsError {
		k = string(res.Kind)
	}
	if took < 0 {
		k += " negative duration"
	}
	o.kinds = append(o.kinds, req.Name+" "+k)
}

func TestOutcomeRecorder(t *testing.T) {
	o := &outcomes{}
	reg := tool.NewRegistry(tool.WithAuthorizer(o))
	reg.Register(tool.Must(tool.New("t", "t", func(ctx context.Context, a struct {
		Fail string `json:"fail,omitempty"`
	}) (string, error) {
		if a.Fail != "" {
			return "", errors.New("failed")
		}
		return "ok", nil
	})))
	reg.Execute(context.Background(), "t", nil)
	reg.Execute(context.Background(), "t", json.RawMessage(`{"fail":"yes"}`))
	reg.Execute(context.Background(), "t", json.RawMessage(`{"fail":"deny"}`)) // refused: no outcome
	reg.Execute(context.Background(), "t", json.RawMessage(`{"nope":1}`))      // invalid: never authorized
	tool.NewExecutor(reg).Run(context.Background(), []tool.Call{{ID: "1", Name: "t"}})
	if got := strings.Join(o.kinds, ";"); got != "t ok;t tool_error;t ok" {
		t.Errorf("outcomes = %s", got)
	}
}
