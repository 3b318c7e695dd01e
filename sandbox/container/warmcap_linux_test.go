package container

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/moby/moby/client"
)

// engineCount counts the containers of backend c the engine holds, through
// a client of its own.
func engineCount(t *testing.T, c *Backend) int {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	must(t, err)
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", LabelBackend+"="+c.id),
	})
	must(t, err)
	return len(list.Items)
}

// TestWarmContainersCapped is the attack of a caller that varies its
// policy on every call (an environment value per call, as a tool that
// passes a request id would): each policy is a warm container of its own,
// and each holds its memory, processes and /tmp on the engine until
// Close. The control, with a cap larger than the calls, shows them piling
// up one per policy; under Options.MaxWarm the backend retires the least
// recently used one, so the engine never holds more than the cap, and a
// policy used recently keeps its container.
func TestWarmContainersCapped(t *testing.T) {
	const calls = 5
	run := func(t *testing.T, c *Backend, i int) string {
		t.Helper()
		p := sandbox.Policy{Env: []string{"REQUEST=" + strconv.Itoa(i)}}
		r, err := c.Run(context.Background(), p, []string{"cat", "/etc/hostname"}, nil)
		if err != nil || !r.OK() {
			t.Fatalf("call %d: %v %v", i, r, err)
		}
		if r.Mode != sandbox.ModeWarmServer || r.Fallback != "" {
			t.Fatalf("call %d: mode %s (%q), want a warm container", i, r.Mode, r.Fallback)
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	t.Run("control", func(t *testing.T) {
		c := requireEngineWith(t, Options{Warm: true, MaxWarm: 100})
		for i := range calls {
			run(t, c, i)
		}
		if n := engineCount(t, c); n != calls {
			t.Fatalf("control: %d containers after %d policies, want one each: the attack no longer piles them up", n, calls)
		}
	})
	t.Run("capped", func(t *testing.T) {
		c := requireEngineWith(t, Options{Warm: true, MaxWarm: 2})
		hosts := map[int]string{}
		for i := range calls {
			hosts[i] = run(t, c, i)
			if n := engineCount(t, c); n > 2 {
				t.Fatalf("after policy %d: %d containers on the engine, want at most MaxWarm 2", i, n)
			}
			c.mu.Lock()
			slots := len(c.warm)
			c.mu.Unlock()
			if slots > 2 {
				t.Fatalf("after policy %d: %d warm slots, want at most 2", i, slots)
			}
		}
		// The most recent policy kept its container; the oldest lost its
		// own and gets a new one, which retires the least recently used.
		if h := run(t, c, calls-1); h != hosts[calls-1] {
			t.Errorf("the most recent policy ran in %s, want its warm container %s", h, hosts[calls-1])
		}
		if h := run(t, c, 0); h == hosts[0] {
			t.Errorf("the oldest policy ran in its first container %s, which the cap should have retired", h)
		}
		if n := engineCount(t, c); n > 2 {
			t.Fatalf("%d containers on the engine, want at most 2", n)
		}
	})
	t.Run("all in use", func(t *testing.T) {
		// With every warm container busy, a call for another policy is
		// not queued behind them nor given a container past the cap: it
		// runs fresh, and says so.
		c := requireEngineWith(t, Options{Warm: true, MaxWarm: 1})
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			r, err := c.Run(context.Background(), sandbox.Policy{Env: []string{"REQUEST=busy"}}, []string{"cat"}, pr)
			if err == nil && !r.OK() {
				err = io.ErrUnexpectedEOF
			}
			done <- err
		}()
		defer func() {
			pw.Close()
			if err := <-done; err != nil {
				t.Errorf("busy call: %v", err)
			}
		}()
		// Wait until the busy call holds its slot: the slot exists and
		// its lock is taken (bounded, not timed: polls).
		for i := 0; ; i++ {
			c.mu.Lock()
			held := false
			for _, s := range c.warm {
				if s.mu.TryLock() {
					s.mu.Unlock()
				} else {
					held = true
				}
			}
			c.mu.Unlock()
			if held {
				break
			}
			if i > 3000 {
				t.Fatal("the busy call never took its warm slot")
			}
			time.Sleep(10 * time.Millisecond) // ok-wallclock: polling, not asserting
		}
		r, err := c.Run(context.Background(), sandbox.Policy{Env: []string{"REQUEST=other"}}, []string{"echo", "ok"}, nil)
		if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
			t.Fatalf("%v %v", r, err)
		}
		if r.Mode != sandbox.ModeFresh || !strings.Contains(r.Fallback, "MaxWarm") {
			t.Errorf("mode %s, fallback %q: want a fresh container saying the warm ones are all in use", r.Mode, r.Fallback)
		}
		c.mu.Lock()
		slots := len(c.warm)
		c.mu.Unlock()
		if slots != 1 {
			t.Errorf("%d warm slots, want the busy one only", slots)
		}
	})
}
