package toolbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
)

// TestWait: the wait tool waits the time asked for (in the bubble's fake
// clock), reports progress on each whole second, stops at once when its
// context ends, and refuses a time out of range.
func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seconds  float64
		cancelAt time.Duration // 0: never
		want     string
		progress []string
		waited   time.Duration
	}{
		{"zero", 0, 0, "waited 0 seconds", nil, 0},
		{"under a second", 0.5, 0, "waited 0.5 seconds", nil, 500 * time.Millisecond},
		{"seconds", 2.5, 0, "waited 2.5 seconds", []string{"1/2.5 waited 1 of 2.5 seconds", "2/2.5 waited 2 of 2.5 seconds"}, 2500 * time.Millisecond},
		{"the most", 600, 0, "waited 600 seconds", nil, MaxWait},
		{"cancelled", 60, 1500 * time.Millisecond, "context canceled", []string{"1/60 waited 1 of 60 seconds"}, 1500 * time.Millisecond},
		{"negative", -1, 0, "seconds must be from 0 to 600, not -1", nil, 0},
		{"too long", 601, 0, "seconds must be from 0 to 600, not 601", nil, 0},
		{"not a number", math.NaN(), 0, "not NaN", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				var progress []string
				ctx = tool.WithProgress(ctx, func(p, total float64, msg string) {
					progress = append(progress, fmt.Sprintf("%g/%g %s", p, total, msg))
				})
				start := time.Now()
				out, err := wait(ctx, tc.seconds)
				if err != nil {
					out = err.Error()
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("wait(%g) = %q, want %q", tc.seconds, out, tc.want)
				}
				if tc.waited == MaxWait {
					// One report a second, the last one at 600 s or not.
					if n := len(progress); n != 599 && n != 600 || progress[0] != "1/600 waited 1 of 600 seconds" {
						t.Errorf("%d progress reports, first %q", n, progress[0])
					}
				} else if fmt.Sprint(progress) != fmt.Sprint(tc.progress) {
					t.Errorf("progress %q, want %q", progress, tc.progress)
				}
				if got := time.Since(start); got != tc.waited {
					t.Errorf("waited %v, want %v", got, tc.waited)
				}
			})
		})
	}
}

// TestWaitTool: through the registry, a call gets its result and a bad
// argument an error result; the tool says it may run as a task.
func TestWaitTool(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(Wait())
	if res := r.Execute(context.Background(), "wait", []byte(`{"seconds":0.001}`)); res.IsError || res.Output != "waited 0.001 seconds" {
		t.Errorf("result %+v", res)
	}
	for _, args := range []string{`{"seconds":-1}`, `{"seconds":601}`, `{}`, `{"seconds":"5"}`} {
		if res := r.Execute(context.Background(), "wait", []byte(args)); !res.IsError || res.Kind != tool.KindInvalidArguments {
			t.Errorf("%s: result %+v, want invalid arguments", args, res)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := r.Execute(ctx, "wait", []byte(`{"seconds":5}`)); !res.IsError || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("a cancelled call: %+v", res)
	}
	w, _ := r.Get("wait")
	if tool.OptionsOf(w).Task != tool.TaskOptional {
		t.Errorf("wait is not a task tool")
	}
}
