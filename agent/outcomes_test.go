package agent

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestExecutorOutcomesMustMatchCalls: the loop gives each outcome back to
// the model as the result of the call at the same position. An executor
// whose batch middleware drops, adds or reorders outcomes (a bug in the
// program's middleware) made results answer the wrong calls, or none,
// or made the loop index past the outcomes. The loop now checks that the
// outcomes answer the calls, one each, by id, and stops the run with an
// error saying so. Control: the middleware that passes outcomes through.
func TestExecutorOutcomesMustMatchCalls(t *testing.T) {
	for _, api := range []API{ChatCompletions, Messages} {
		for _, tt := range []struct {
			name   string
			change func([]tool.Outcome) []tool.Outcome
		}{
			{"control", func(o []tool.Outcome) []tool.Outcome { return o }},
			{"one dropped", func(o []tool.Outcome) []tool.Outcome { return o[:len(o)-1] }},
			{"none", func([]tool.Outcome) []tool.Outcome { return nil }},
			{"one added", func(o []tool.Outcome) []tool.Outcome { return append(o, o[0]) }},
			{"reordered", func(o []tool.Outcome) []tool.Outcome { o[0], o[1] = o[1], o[0]; return o }},
		} {
			t.Run(fmt.Sprintf("%v/%s", api, tt.name), func(t *testing.T) {
				var ran atomic.Int64
				reg := tool.NewRegistry()
				if err := reg.Register(counter{&ran}); err != nil {
					t.Fatal(err)
				}
				ex := tool.NewExecutor(reg, tool.WithBatchMiddleware(func(next tool.BatchStep) tool.BatchStep {
					return func(ctx context.Context, calls []tool.Call) ([]tool.Outcome, error) {
						out, err := next(ctx, calls)
						return tt.change(out), err
					}
				}))
				a := New(model(t, api, manyCallsModel(t, api, "count", 3)), reg, WithExecutor(ex))
				answer, err := a.Run(context.Background(), "count")
				if tt.name == "control" {
					if err != nil || answer != "done" {
						t.Fatalf("control: %q, %v", answer, err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), "outcome") {
					t.Fatalf("Run = %q, %v; want an error saying the outcomes do not answer the calls", answer, err)
				}
			})
		}
	}
}
