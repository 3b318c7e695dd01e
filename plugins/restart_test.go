package plugins

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"go.uber.org/goleak"
)

// fakeClock is the clock of a host's restarts: its time moves only when
// the test advances it, and each wait for a restart is reported on
// waits and lasts until the test releases it (or, with free set, not at
// all).
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits chan time.Duration
	go_   chan struct{}
	free  bool
}

func newFakeClock(h *Host, free bool) *fakeClock {
	c := &fakeClock{t: time.Unix(1e9, 0), waits: make(chan time.Duration, 100), go_: make(chan struct{}), free: free}
	h.now = func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
	h.sleep = func(ctx context.Context, d time.Duration) error {
		c.waits <- d
		if c.free {
			return nil
		}
		select {
		case <-c.go_:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c
}

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// wait returns the next wait for a restart.
func (c *fakeClock) wait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.waits:
		return d
	case <-time.After(time.Minute): // ok-wallclock: a failure bound only
		t.Fatal("no restart was scheduled")
		return 0
	}
}

func TestRestartExitedServer(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	log := filepath.Join(t.TempDir(), "starts")
	srv := withPrefix(fixture(t, log, "echo"), "s_")
	srv.Env[exitAfterEnv] = "1" // each process answers one call
	reg := tool.NewRegistry()
	h := NewHost(reg, WithRestart(RestartPolicy{Attempts: 3, Delay: time.Second, MaxDelay: 3 * time.Second, Stable: time.Minute}))
	clock := newFakeClock(h, false)
	h.Apply(t.Context(), &Config{Servers: map[string]Server{"s": srv}})
	status := func() Status { return h.Status()[0] }
	echo := func() tool.Result { return call(t, reg, "s_echo", `{"text":"hi"}`) }
	var changes atomic.Int64
	defer reg.OnChange(func(string) { changes.Add(1) })()
	answers := func(when string) {
		t.Helper()
		if res := echo(); res.IsError || res.Output != "echo:hi" {
			t.Fatalf("%s: %+v", when, res)
		}
	}
	exits := func(when string, delay time.Duration) {
		t.Helper()
		if res := echo(); !res.IsError || res.Kind == tool.KindUnavailable {
			t.Fatalf("%s: the call that ends the server: %+v", when, res)
		}
		if d := clock.wait(t); d != delay {
			t.Fatalf("%s: restart after %s, want %s", when, d, delay)
		}
	}
	restarted := func(when string, n int) {
		t.Helper()
		clock.go_ <- struct{}{}
		eventually(t, when+": back", func() bool { return status().State == Ready })
		if got := len(starts(t, log)); got != n {
			t.Fatalf("%s: %d starts, want %d", when, got, n)
		}
	}

	answers("first process")
	exits("first exit", time.Second)
	s := status()
	if s.State != Restarting || s.Restarts != 1 || !strings.Contains(s.Err, "restart 1 of 3 in 1s") || s.Tools != 2 {
		t.Fatalf("while restarting: %+v", s)
	}
	// It says how the server ended: its exit status and the end of its
	// standard error.
	if !strings.Contains(s.Err, "exit status 4") || !strings.Contains(s.Err, "\n  fixture: exiting after 1 calls") {
		t.Errorf("while restarting, Err = %q: want how the server ended", s.Err)
	}
	// Meanwhile the tools stay listed, and calls give unavailable at once,
	// reaching no process.
	res := echo()
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, `MCP server "s" ended and is restarting`) || strings.Contains(res.Error, "\n") {
		t.Fatalf("a call while restarting: %+v (want one line)", res)
	}
	if got := len(starts(t, log)); got != 1 {
		t.Fatalf("%d starts before the restart, want 1", got)
	}
	restarted("first restart", 2)
	answers("second process")

	// It ends again before staying up a minute: the delay doubles.
	exits("second exit", 2*time.Second)
	if s := status(); s.Restarts != 2 {
		t.Fatalf("second restart: %+v", s)
	}
	restarted("second restart", 3)
	answers("third process")

	// Once it has stayed up a minute, the count starts again.
	clock.advance(time.Minute)
	exits("third exit", time.Second)
	if s := status(); s.Restarts != 1 {
		t.Fatalf("restart after a stable minute: %+v", s)
	}
	restarted("third restart", 4)
	answers("fourth process")

	// The tools did not change: the restarts left the registry as it was
	// (no list_changed for the clients).
	if n := changes.Load(); n != 0 {
		t.Errorf("%d registry changes from restarts of an unchanged server", n)
	}

	// A server restarting when its entry is removed is not started again.
	exits("fourth exit", 2*time.Second)
	h.Close()
	if got := len(starts(t, log)); got != 4 {
		t.Fatalf("%d starts after the host closed, want 4", got)
	}
	for _, pid := range starts(t, log) {
		if alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
}

func TestRestartGivesUp(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	log := filepath.Join(t.TempDir(), "starts")
	srv := withPrefix(fixture(t, log, "echo"), "s_")
	srv.Env[exitAfterEnv] = "0" // the first call ends it
	srv.Env[maxStartsEnv] = "1" // and it never starts again
	reg := tool.NewRegistry()
	h := NewHost(reg, WithRestart(RestartPolicy{Attempts: 3, Delay: time.Second, MaxDelay: 3 * time.Second, Stable: time.Minute}))
	defer h.Close()
	clock := newFakeClock(h, true)
	h.Apply(t.Context(), &Config{Servers: map[string]Server{"s": srv}})
	if res := call(t, reg, "s_echo", `{"text":"x"}`); !res.IsError || res.Kind == tool.KindInvalidArguments {
		t.Fatalf("the call that ends the server: %+v", res)
	}
	eventually(t, "given up", func() bool { return h.Status()[0].State == Failed })
	var waits []time.Duration
	for len(clock.waits) > 0 {
		waits = append(waits, <-clock.waits)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v (doubling, capped)", waits, want)
	}
	s := h.Status()[0]
	if s.Restarts != 3 || !strings.Contains(s.Err, "not restarted again after 3 restarts in a row") ||
		!strings.Contains(s.Err, "restart failed") {
		t.Errorf("given up: %+v", s)
	}
	if got := len(starts(t, log)); got != 4 {
		t.Errorf("%d starts, want 4 (one, then three restarts)", got)
	}
	res := call(t, reg, "s_echo", `{"text":"x"}`)
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "given up") {
		t.Errorf("a call after giving up: %+v", res)
	}
	h.Close()
	for _, pid := range starts(t, log) {
		if alive(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
}

// TestDefaultRestartIsACopy: changing the policy DefaultRestart returns
// changes neither the next one nor a Host's restarts.
func TestDefaultRestartIsACopy(t *testing.T) {
	d := DefaultRestart()
	d.Attempts = -1
	if got := DefaultRestart(); got.Attempts != 5 || got.Delay != 500*time.Millisecond {
		t.Fatalf("DefaultRestart after a caller changed its copy: %+v", got)
	}
}
