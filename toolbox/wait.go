package toolbox

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/miniopenclaw/tool"
)

// MaxWait is the longest the wait tool waits.
const MaxWait = 10 * time.Minute

// waitArgs are the arguments of the wait tool.
type waitArgs struct {
	Seconds float64 `json:"seconds" minimum:"0" maximum:"600" examples:"5,30" description:"How long to wait, in seconds: at most 600."`
}

// Wait returns the tool "wait": it waits the given number of seconds (at
// most [MaxWait]), reporting its progress every second
// (tool.ReportProgress), and says how long it waited. It is the built-in
// tool that runs as an MCP task (tool.TaskOptional): served to a client
// that supports tasks, a call is answered at once with a task that the
// client polls, and for any other caller it is an ordinary call that
// returns when the time is up. A call whose context ends stops waiting at
// once and returns the context's error. It touches nothing and holds
// nothing but a timer.
func Wait() tool.Tool {
	return tool.Must(tool.New("wait",
		"Waits the given number of seconds (at most 600), then says how long it waited. "+
			"Use it to pause before trying something again, such as checking whether a job has finished.",
		func(ctx context.Context, in waitArgs) (string, error) {
			return wait(ctx, in.Seconds)
		},
		tool.WithAnnotations(tool.Annotations{Title: "Wait", ReadOnly: true, Idempotent: true}),
		tool.WithTimeout(MaxWait+time.Minute), tool.WithTask(tool.TaskOptional)))
}

// wait waits seconds, reporting progress on each whole second.
func wait(ctx context.Context, seconds float64) (string, error) {
	if math.IsNaN(seconds) || seconds < 0 || seconds > MaxWait.Seconds() {
		return "", fmt.Errorf("seconds must be from 0 to %g, not %g", MaxWait.Seconds(), seconds)
	}
	d := time.Duration(seconds * float64(time.Second))
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for elapsed := 1; ; elapsed++ {
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-done.C:
			return fmt.Sprintf("waited %g seconds", seconds), nil
		case <-tick.C:
			tool.ReportProgress(ctx, float64(elapsed), seconds, fmt.Sprintf("waited %d of %g seconds", elapsed, seconds))
		}
	}
}
