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
