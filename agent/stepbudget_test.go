package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// big is a tool whose output fills the registry's default result budget.
type big struct{}

func (big) Name() string                { return "big" }
func (big) Description() string         { return "Returns a lot." }
func (big) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (big) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: strings.Repeat("x", tool.DefaultMaxOutput)}, nil
}

// TestStepResultsBounded is an attack: each result is cut to the result
// budget (64 KiB), but a turn may hold 1,024 calls, so one turn's results
// put 64 MiB into the next request, and every later request carries them
// again. The results of one step together are now cut to
// MaxStepResultBytes, each to an equal share, with a notice. Control: a
// turn whose results fit is not cut.
func TestStepResultsBounded(t *testing.T) {
	for _, api := range []API{ChatCompletions, Messages} {
		for _, n := range []int{8, MaxStepCalls} {
			t.Run(fmt.Sprintf("%v/%d", api, n), func(t *testing.T) {
				reg := tool.NewRegistry()
				if err := reg.Register(big{}); err != nil {
					t.Fatal(err)
				}
				var rec record
				a := New(model(t, api, manyCallsModel(t, api, "big", n)), reg, WithObserver(rec.observe))
				if answer, err := a.Run(context.Background(), "go"); err != nil || answer != "done" {
					t.Fatalf("Run = %q, %v", answer, err)
				}
				total, cut := 0, 0
				for _, o := range rec.results() {
					total += len(o.Result.Output)
					if strings.Contains(o.Result.Output, "step's results") {
						cut++
					}
				}
				if n*tool.DefaultMaxOutput <= MaxStepResultBytes {
					if total != n*tool.DefaultMaxOutput || cut != 0 {
						t.Fatalf("control: %d results of %d bytes in all, %d cut; want them whole", n, total, cut)
					}
					return
				}
				if total > MaxStepResultBytes+n*200 || cut != n {
					t.Errorf("%d results: %d bytes in all, %d cut; want at most %d and a notice on each", n, total, cut, MaxStepResultBytes)
				}
			})
		}
	}
}
