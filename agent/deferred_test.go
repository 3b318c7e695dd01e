package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/toolsearch"
)

// TestDeferredToolNotFoundDoesNotRun is an attack: tool search keeps a
// tool out of the model's request until a search finds it, and a model
// that guesses the name (or reads it in a tool's output) calls it
// anyway, in its first turn, without searching. The call ran: deferral
// only shaped the request, and the loop handed every call to the
// executor. A deferred tool no search has found must not run; the call
// gets a not_found result that tells the model to search first.
// Control: with nothing deferred the same turn runs the tool.
func TestDeferredToolNotFoundDoesNotRun(t *testing.T) {
	for _, api := range []API{ChatCompletions, Messages} {
		for _, deferred := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/deferred=%v", api, deferred), func(t *testing.T) {
				var ran atomic.Int64
				reg := bigRegistry(t)
				if err := reg.Register(counter{&ran}); err != nil {
					t.Fatal(err)
				}
				loading := toolsearch.Loading{Threshold: -1} // the control: nothing deferred
				if deferred {
					loading = toolsearch.Loading{Deferred: []string{"count"}}
				}
				var rec record
				a := New(model(t, api, manyCallsModel(t, api, "count", 1)), reg,
					WithToolSearch(loading), WithObserver(rec.observe))
				defer a.Close()
				answer, err := a.Run(context.Background(), "count")
				if err != nil || answer != "done" {
					t.Fatalf("Run: %q, %v", answer, err)
				}
				res := rec.results()
				if len(res) != 1 {
					t.Fatalf("%d results, want 1", len(res))
				}
				if !deferred {
					if ran.Load() != 1 || res[0].Result.IsError {
						t.Fatalf("control: ran %d times, result %+v; want one run", ran.Load(), res[0].Result)
					}
					return
				}
				if n := ran.Load(); n != 0 {
					t.Errorf("the deferred tool ran %d times before any search found it", n)
				}
				r := res[0].Result
				if !r.IsError || r.Kind != tool.KindNotFound || !strings.Contains(r.Error, toolsearch.ToolName) {
					t.Errorf("result = %+v, want not_found telling the model to use %s", r, toolsearch.ToolName)
				}
				if !errors.Is(res[0].Err, tool.ErrNotFound) {
					t.Errorf("Err = %v, want ErrNotFound", res[0].Err)
				}
			})
		}
	}
}
