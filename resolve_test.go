package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

type resolveArgs struct {
	Path string `json:"path"`
}

// TestWithResolveOneResolution checks that what WithResolve's function
// leaves is what the Authorizer decides on and what the tool receives,
// on every way of calling the tool, and that its refusal stops the call
// before either sees it.
func TestWithResolveOneResolution(t *testing.T) {
	var got []string
	tl := tool.Must(tool.New("read", "Reads.", func(ctx context.Context, in resolveArgs) (string, error) {
		got = append(got, in.Path)
		return in.Path, nil
	}, tool.WithResolve(func(in *resolveArgs) error {
		switch in.Path {
		case "link":
			in.Path = "secrets/k" // where the link leads
		case "out":
			return &tool.ArgumentError{Violations: []tool.Violation{{Pointer: "/path", Expected: "a path inside the workspace", Got: `"out", which leads out of it`}}}
		case "plain":
			return errors.New("plain refusal")
		}
		return nil
	})))
	var decided []string
	reg := tool.NewRegistry(tool.WithAuthorizer(authFunc(func(ctx context.Context, req tool.AccessRequest) error {
		decided = append(decided, string(req.Args))
		if v, ok := req.Argument("path"); !ok || v.String != "secrets/k" && v.String != "docs/a" {
			t.Errorf("Argument(path) = %+v, %v", v, ok)
		}
		if strings.Contains(string(req.Args), "secrets") {
			return errors.New("no secrets")
		}
		return nil
	})))
	reg.Register(tl)
	ctx := context.Background()
	if res := reg.Execute(ctx, "read", json.RawMessage(`{"path":"link"}`)); res.Kind != tool.KindDenied {
		t.Errorf("link: %+v, want denied on the resolved path", res)
	}
	if res := reg.Execute(ctx, "read", json.RawMessage(`{"path":"docs/a"}`)); res.IsError || res.Output != "docs/a" {
		t.Errorf("docs/a: %+v", res)
	}
	if want := []string{`{"path":"secrets/k"}`, `{"path":"docs/a"}`}; strings.Join(decided, " ") != strings.Join(want, " ") {
		t.Errorf("the Authorizer saw %q, want %q", decided, want)
	}
	for _, tt := range []struct{ path, want string }{
		{"out", `invalid arguments for tool "read": /path: expected a path inside the workspace, got "out", which leads out of it`},
		{"plain", `invalid arguments for tool "read": (root): expected arguments the tool can resolve, got plain refusal`},
	} {
		args := json.RawMessage(`{"path":"` + tt.path + `"}`)
		if res := reg.Execute(ctx, "read", args); res.Kind != tool.KindInvalidArguments || !strings.HasPrefix(res.Error, tt.want) {
			t.Errorf("%s: %+v; want %q", tt.path, res, tt.want)
		}
		res, err := tl.Execute(ctx, args)
		var ae *tool.ArgumentError
		if res.Kind != tool.KindInvalidArguments || !errors.As(err, &ae) || !errors.Is(err, tool.ErrInvalidArguments) || ae.Tool != "read" {
			t.Errorf("%s, direct: %+v, %v", tt.path, res, err)
		}
	}
	if len(decided) != 2 {
		t.Errorf("refused resolutions reached the Authorizer: %q", decided)
	}
	// Without a registry, the tool resolves the same way.
	if res, _ := tl.Execute(ctx, json.RawMessage(`{"path":"link"}`)); res.Output != "secrets/k" {
		t.Errorf("direct Execute: %+v", res)
	}
	if strings.Join(got, " ") != "docs/a secrets/k" {
		t.Errorf("the function got %q", got)
	}
}

func TestWithResolveMisuse(t *testing.T) {
	_, err := tool.New("read", "Reads.", func(ctx context.Context, in resolveArgs) (string, error) { return "", nil },
		tool.WithResolve(func(in *struct{ X int }) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "WithResolve's function takes") {
		t.Errorf("mismatched WithResolve: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("With accepted WithResolve")
		}
	}()
	tool.With(tool.Must(tool.New("x", "x", func(ctx context.Context, in resolveArgs) (string, error) { return "", nil })),
		tool.WithResolve(func(in *resolveArgs) error { return nil }))
}
