package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestExecutorBoundsNamesItEchoes: a model's call may name a tool and an
// ID a megabyte long. The executor's debug record of the call and the
// result of a call whose middleware panicked quoted them whole: a
// megabyte into the program's log and back into the model's context for
// each such call. They are cut as the not-found message cuts a name.
// Control: a short name is written whole.
func TestExecutorBoundsNamesItEchoes(t *testing.T) {
	var logs bytes.Buffer
	reg := tool.NewRegistry(tool.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	reg.Register(tool.Must(tool.New("echo", "Echoes.", func(_ context.Context, in struct{ Text string }) (string, error) { return in.Text, nil })))
	panicky := func(next tool.Step) tool.Step {
		return func(ctx context.Context, c tool.Call) (tool.Result, error) {
			if strings.HasPrefix(c.Name, "boom") {
				panic("middleware bug")
			}
			return next(ctx, c)
		}
	}
	ex := tool.NewExecutor(reg, tool.WithMiddleware(panicky))
	long := strings.Repeat("n", 1<<20)
	outs, err := ex.Run(t.Context(), []tool.Call{
		{ID: "id-" + long, Name: long, Args: json.RawMessage(`{}`)},
		{ID: "2", Name: "boom" + long, Args: json.RawMessage(`{}`)},
		{ID: "3", Name: "echo", Args: json.RawMessage(`{"Text":"ok"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs[:2] {
		if n := len(o.Result.Error); n > 4<<10 {
			t.Errorf("call %d: an error of %d bytes", i, n)
		}
	}
	if outs[1].Result.Kind != tool.KindPanic {
		t.Errorf("the panicking middleware's call: %+v", outs[1].Result)
	}
	// The panic record holds a stack, a few KiB; nothing holds the name.
	if n := logs.Len(); n > 64<<10 {
		t.Errorf("the log holds %d bytes after three calls", n)
	}
	if !strings.Contains(logs.String(), "tool=echo") {
		t.Errorf("control: the short name is not in the log:\n%s", logs.String())
	}
}
