package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
)

// argAuth records what AccessRequest.Argument says about one name.
type argAuth struct {
	name      string
	deferArgs bool
	got       tool.ArgumentValue
	ok        bool
	calls     int
}

func (a *argAuth) DefersArgs() bool { return a.deferArgs }

func (a *argAuth) Authorize(ctx context.Context, req tool.AccessRequest) error {
	a.got, a.ok = req.Argument(a.name)
	a.calls++
	return nil
}

// TestArgumentThroughRegistry reads arguments of calls a Registry
// checked: defaults applied, escapes decoded, names matched exactly,
// whether or not the Authorizer defers the encoding.
func TestArgumentThroughRegistry(t *testing.T) {
	type in struct {
		Path  string `json:"path"`
		Depth int    `json:"depth,omitempty" default:"3"`
		Force bool   `json:"force,omitempty"`
		Size  uint64 `json:"size,omitempty"`
	}
	typed := tool.Must(tool.New("typed", "t", func(ctx context.Context, a in) (string, error) { return "ok", nil }, tool.WithInline()))
	for _, tt := range []struct {
		name, args, arg string
		want            tool.ArgumentValue
	}{
		{"string", `{"path":"docs/a"}`, "path", tool.ArgumentValue{Kind: tool.ArgumentString, String: "docs/a"}},
		{"escaped string", `{"path":"a\"b\u003c\u00e9\n"}`, "path", tool.ArgumentValue{Kind: tool.ArgumentString, String: "a\"b<é\n"}},
		{"default", `{"path":"a"}`, "depth", tool.ArgumentValue{Kind: tool.ArgumentInt64, Int64: 3}},
		{"given integer", `{"path":"a","depth":-7}`, "depth", tool.ArgumentValue{Kind: tool.ArgumentInt64, Int64: -7}},
		{"bool", `{"path":"a","force":true}`, "force", tool.ArgumentValue{Kind: tool.ArgumentBool, Bool: true}},
		{"omitted zero", `{"path":"a","force":false}`, "force", tool.ArgumentValue{}},
		{"largest int64 as uint64", `{"path":"a","size":9223372036854775807}`, "size", tool.ArgumentValue{Kind: tool.ArgumentInt64, Int64: 1<<63 - 1}},
		{"unknown name", `{"path":"a"}`, "nope", tool.ArgumentValue{}},
		{"case variant", `{"path":"a"}`, "Path", tool.ArgumentValue{}},
	} {
		for _, deferred := range []bool{true, false} {
			a := &argAuth{name: tt.arg, deferArgs: deferred}
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			reg.Register(typed)
			if res := reg.Execute(context.Background(), "typed", json.RawMessage(tt.args)); res.IsError {
				t.Fatalf("%s: %s", tt.name, res.Error)
			}
			if a.calls != 1 || !a.ok || a.got != tt.want {
				t.Errorf("%s (deferred %v): Argument(%q) = %+v, %v; want %+v, true", tt.name, deferred, tt.arg, a.got, a.ok, tt.want)
			}
		}
	}
}

// TestArgumentDeclines lists the calls AccessRequest.Argument leaves to
// Arguments: it must say it cannot answer, never guess.
func TestArgumentDeclines(t *testing.T) {
	type nested struct {
		Path  string            `json:"path"`
		Inner struct{ A int }   `json:"inner"`
		Tags  map[string]string `json:"tags,omitempty"`
	}
	type float struct {
		Path  string  `json:"path"`
		Ratio float64 `json:"ratio"`
	}
	type list struct {
		Path  string   `json:"path"`
		Items []string `json:"items"`
	}
	type quoted struct {
		Path string `json:"path"`
		N    int    `json:"n,string"`
	}
	type ptr struct {
		Path string `json:"path"`
	}
	for _, tt := range []struct {
		name string
		tool tool.Tool
		args string
	}{
		{"hand-written schema", authHandTool{"t", `{"type":"object","properties":{"path":{"type":"string"}}}`,
			func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
				return tool.Result{Output: "ok"}, nil
			}}, `{"path":"a"}`},
		{"nested struct field", tool.Must(tool.New("t", "t", func(ctx context.Context, a nested) (string, error) { return "ok", nil })), `{"path":"a","inner":{"A":1}}`},
		{"float field", tool.Must(tool.New("t", "t", func(ctx context.Context, a float) (string, error) { return "ok", nil })), `{"path":"a","ratio":1}`},
		{"slice field", tool.Must(tool.New("t", "t", func(ctx context.Context, a list) (string, error) { return "ok", nil })), `{"path":"a","items":[]}`},
		{"string option", tool.Must(tool.New("t", "t", func(ctx context.Context, a quoted) (string, error) { return "ok", nil })), `{"path":"a","n":"1"}`},
		{"pointer to struct", tool.Must(tool.New("t", "t", func(ctx context.Context, a *ptr) (string, error) { return "ok", nil })), `{"path":"a"}`},
		{"map", tool.Must(tool.New("t", "t", func(ctx context.Context, a map[string]string) (string, error) { return "ok", nil })), `{"path":"a"}`},
	} {
		for _, deferred := range []bool{true, false} {
			a := &argAuth{name: "path", deferArgs: deferred}
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			reg.Register(tt.tool)
			if res := reg.Execute(context.Background(), "t", json.RawMessage(tt.args)); res.IsError {
				t.Fatalf("%s: %s", tt.name, res.Error)
			}
			if a.calls != 1 || a.ok || a.got != (tool.ArgumentValue{}) {
				t.Errorf("%s (deferred %v): Argument(\"path\") = %+v, %v; want it declined", tt.name, deferred, a.got, a.ok)
			}
		}
	}
	for _, req := range []tool.AccessRequest{{}, {Name: "t", Args: json.RawMessage(`{"path":"a"}`)}} {
		if v, ok := req.Argument("path"); ok {
			t.Errorf("AccessRequest made by hand (%s): Argument answered %+v", req.Args, v)
		}
	}
}
