package mcptasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
)

// TestDurableTaskRunEndsAtTTL is an attack on the TTL of durable tasks:
// once a task's TTL has passed, tasks/* answer as for an unknown task, so
// its client can no longer cancel it, yet its worker ran the call on to
// the tool's own limit (here a minute), well past the TTL. The run must
// end at the TTL. The control is a task cancelled while it runs: its run
// ends, so the check sees a run that ends.
func TestDurableTaskRunEndsAtTTL(t *testing.T) {
	for _, cancel := range []bool{true, false} {
		name := map[bool]string{true: "cancelled (control)", false: "expired"}[cancel]
		t.Run(name, func(t *testing.T) {
			ns := startNATS(t)
			nc := connect(t, ns)
			ctx := context.Background()
			const ttl = 2 * time.Second
			store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Limits: mcptool.TaskLimits{TTL: ttl}})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			started, ended := make(chan struct{}, 1), make(chan error, 1)
			r := tool.NewRegistry()
			r.Register(tool.Must(tool.New("long", "Works for a minute.", func(ctx context.Context, in struct{}) (string, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
					ended <- context.Cause(ctx)
					return "", context.Cause(ctx)
				case <-time.After(time.Minute):
					ended <- nil
					return "worked a minute", nil
				}
			}, tool.WithTask(tool.TaskRequired), tool.WithTimeout(2*time.Minute))))
			w, err := store.Jobs().Work(r, "w", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "long", Args: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("no worker ran the task")
			}
			if cancel {
				if _, err := store.Cancel(ctx, "alice", rec.TaskID); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-ended:
				switch {
				case err == nil:
					t.Error("the call ran to its end, past the task's TTL")
				case !cancel && !strings.Contains(err.Error(), "expired"):
					t.Errorf("the run ended with %v, want it to say the task expired", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("the call still runs 30 s after the task's TTL (%v) passed", ttl)
			}
		})
	}
}
