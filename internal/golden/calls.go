package golden

import (
	"context"
	"testing"

	"github.com/miniopenclaw/tool"
)

// A Call is what a golden file records of a call an adapter parsed and
// of its result when run: the error text belongs to the registry and is
// left out, so that the golden pins the adapter, not the registry's
// wording.
type Call struct {
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Args    string         `json:"args"`
	Output  string         `json:"output,omitempty"`
	IsError bool           `json:"is_error"`
	Kind    tool.ErrorKind `json:"kind,omitempty"`
}

// RunCalls registers tools in a new [tool.Registry], executes calls one
// after another with it, and returns a [Call] for each, in order. A tool
// that cannot be registered stops the test with t.Fatal.
func RunCalls(t testing.TB, tools []tool.Tool, calls []tool.Call) []Call {
	t.Helper()
	r := tool.NewRegistry()
	for _, tl := range tools {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	var out []Call
	for _, c := range calls {
		res := r.Execute(context.Background(), c.Name, c.Args)
		out = append(out, Call{c.ID, c.Name, string(c.Args), res.Output, res.IsError, res.Kind})
	}
	return out
}
