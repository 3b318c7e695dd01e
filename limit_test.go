package tool_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
)

// TestSharedTimer checks that a tool with Options.SharedTimer sees the
// context a tool without it sees, and gives the same results at the same
// moments: the limit reported and enforced, DeadlineExceeded with the
// cause ErrTimeout, the caller's earlier deadline or cancel winning;
// only a context derived from it ends with Canceled.
func TestSharedTimer(t *testing.T) {
	type seen struct {
		deadline    time.Duration // from the call, as Deadline reports it
		err, derive error         // Err of the context and of one derived from it, when Done
		cause       error
		at          time.Duration
	}
	for _, tt := range []struct {
		name     string
		caller   time.Duration // the caller's deadline, 0: none
		cancelAt time.Duration // the caller cancels then, 0: never
		returnAt time.Duration // the tool returns then without waiting, 0: it waits for Done
		kind     tool.ErrorKind
		want     seen
		derived  error // what a derived context's Err is with the shared timer
	}{
		{name: "limit", kind: tool.KindTimeout,
			want:    seen{deadline: 2 * time.Second, err: context.DeadlineExceeded, derive: context.DeadlineExceeded, cause: tool.ErrTimeout, at: 2 * time.Second},
			derived: context.Canceled},
		{name: "caller's earlier deadline", caller: time.Second, kind: tool.KindCanceled,
			want:    seen{deadline: time.Second, err: context.DeadlineExceeded, derive: context.DeadlineExceeded, cause: context.DeadlineExceeded, at: time.Second},
			derived: context.DeadlineExceeded},
		{name: "caller's later deadline", caller: 5 * time.Second, kind: tool.KindTimeout,
			want:    seen{deadline: 2 * time.Second, err: context.DeadlineExceeded, derive: context.DeadlineExceeded, cause: tool.ErrTimeout, at: 2 * time.Second},
			derived: context.Canceled},
		{name: "caller cancels", cancelAt: 500 * time.Millisecond, kind: tool.KindCanceled,
			want:    seen{deadline: 2 * time.Second, err: context.Canceled, derive: context.Canceled, cause: context.Canceled, at: 500 * time.Millisecond},
			derived: context.Canceled},
		{name: "returns in time", returnAt: time.Second, want: seen{deadline: 2 * time.Second, at: time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, shared := range []bool{false, true} {
				synctest.Test(t, func(t *testing.T) {
					r := tool.NewRegistry(tool.WithDefaultTimeout(2*time.Second), tool.WithLogger(slog.New(slog.DiscardHandler)))
					start := time.Now()
					var got seen
					opts := []tool.Option{}
					if shared {
						opts = append(opts, tool.WithSharedTimer())
					}
					must(t, r.Register(tool.Must(tool.New("t", "Reports its context.", func(ctx context.Context, _ struct{}) (string, error) {
						d, _ := ctx.Deadline()
						got.deadline = d.Sub(start)
						derived, cancel := context.WithCancel(ctx)
						defer cancel()
						if tt.returnAt > 0 {
							time.Sleep(tt.returnAt)
							got.at = time.Since(start)
							return "ok", nil
						}
						<-derived.Done()
						got.at = time.Since(start)
						got.err, got.derive, got.cause = ctx.Err(), derived.Err(), context.Cause(ctx)
						return "", ctx.Err()
					}, opts...))))
					ctx := context.Background()
					if tt.caller > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, tt.caller)
						defer cancel()
					}
					if tt.cancelAt > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithCancel(ctx)
						defer cancel()
						time.AfterFunc(tt.cancelAt, cancel)
					}
					res := r.Execute(ctx, "t", nil)
					if res.Kind != tt.kind {
						t.Errorf("shared %v: Execute = %+v, want kind %q", shared, res, tt.kind)
					}
					want := tt.want
					if shared && tt.derived != nil {
						want.derive = tt.derived
					}
					if got != want {
						t.Errorf("shared %v: the tool saw %+v, want %+v", shared, got, want)
					}
				})
			}
		})
	}
}

// TestSharedTimerConcurrent runs calls with limits in an order other
// than their limits': each ends at its own limit, whatever was running
// or had ended before it.
func TestSharedTimerConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
		waits := func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}
		limits := []time.Duration{5, 1, 3, 1, 4, 2, 6}
		for i, l := range limits {
			must(t, r.Register(tool.Must(tool.New(string(rune('a'+i)), "Waits.", waits,
				tool.WithSharedTimer(), tool.WithTimeout(l*time.Second)))))
		}
		// A call that ends at once, before the others start: its limit,
		// the earliest, is where the timer is set first.
		must(t, r.Register(tool.Must(tool.New("quick", "Returns.", func(context.Context, struct{}) (string, error) { return "ok", nil },
			tool.WithSharedTimer(), tool.WithTimeout(time.Second/2)))))
		if res := r.Execute(context.Background(), "quick", nil); res.IsError {
			t.Fatal(res.Error)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i, l := range limits {
			wg.Go(func() {
				res := r.Execute(context.Background(), string(rune('a'+i)), nil)
				if d := time.Since(start); res.Kind != tool.KindTimeout || d != l*time.Second {
					t.Errorf("call %d: %+v after %v, want a timeout after %v", i, res, d, l*time.Second)
				}
			})
		}
		wg.Wait()
		if res := r.Execute(context.Background(), "quick", nil); res.IsError {
			t.Errorf("after the others: %+v", res)
		}
	})
}
