package mcptool_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"go.uber.org/goleak"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// importFixture connects to the stdio fixture mode and imports its tools.
func importFixture(t *testing.T, mode string, opts ...mcptool.ClientOption) (*tool.Registry, *mcptool.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := mcptool.Connect(ctx, mcptool.CommandTransport(fixtureCmd(t, mode)), opts...)
	if err != nil {
		t.Fatalf("Connect to the %s fixture: %v", mode, err)
	}
	t.Cleanup(func() { c.Close() })
	reg := tool.NewRegistry()
	if err := c.Import(ctx, reg); err != nil {
		t.Fatalf("Import from the %s fixture: %v", mode, err)
	}
	return reg, c
}

func TestCommandSkipsBanner(t *testing.T) {
	var logs syncBuffer
	reg, _ := importFixture(t, "banner", mcptool.WithClientLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	res := reg.Execute(t.Context(), "echo", []byte(`{"text":"hi"}`))
	if res.IsError || res.Output != "hi" {
		t.Errorf("echo after a banner: %+v", res)
	}
	for _, want := range []string{"Starting the time server", `{\"status\":\"ready\"}`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not mention the skipped line %s:\n%s", want, logs.String())
		}
	}
}

func TestCommandReportsCrash(t *testing.T) {
	reg, c := importFixture(t, "crash")
	if err := c.Err(); err != nil {
		t.Errorf("Err while up: %v, want nil", err)
	}
	res := reg.Execute(t.Context(), "crash", []byte(`{}`))
	if !res.IsError {
		t.Fatalf("crash: %+v, want an error", res)
	}
	for _, want := range []string{"MCP server", "crash", "exit status 3", "panic: out of cheese", "loading the cheese"} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("crash: error %q does not say %q", res.Error, want)
		}
	}
	<-c.Done()
	// The client says how the connection ended, standard error included.
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "panic: out of cheese") {
		t.Errorf("Err after the crash: %v, want the exit status and the end of standard error", err)
	}
	res = reg.Execute(t.Context(), "echo", []byte(`{"text":"hi"}`))
	if !res.IsError || !strings.Contains(res.Error, "exit status 3") {
		t.Errorf("echo after the crash: %+v, want an error saying how the server ended", res)
	}
}

func TestCommandRootsWithoutParams(t *testing.T) {
	reg, _ := importFixture(t, "roots")
	res := reg.Execute(t.Context(), "roots", []byte(`{}`))
	if res.IsError || !strings.Contains(res.Output, `"roots":[]`) {
		t.Errorf("roots/list without params: %+v, want the client's empty roots", res)
	}
}

// TestCommandLeavesNoGoroutine checks that closing a Command client ends
// everything it started, the process included.
func TestCommandLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := mcptool.Connect(ctx, mcptool.CommandTransport(fixtureCmd(t, "banner")))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := c.Import(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if res := reg.Execute(ctx, "echo", []byte(`{"text":"x"}`)); res.IsError {
		t.Error(res.Error)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestCommandKillsStubbornServer: a server ignores the end of its input
// and SIGTERM. Close still ends it (SIGKILL) and reaps it: no process is
// left running, none left a zombie.
func TestCommandKillsStubbornServer(t *testing.T) {
	cmd := fixtureCmd(t, "stubborn")
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := mcptool.Connect(ctx, mcptool.CommandTransport(cmd))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("Close returned before the server was reaped")
	}
	// The control is the server itself: it exited by SIGKILL only, so it
	// outlived both the closed input and SIGTERM.
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the server ended with %v, want killed by SIGKILL after ignoring its input's end and SIGTERM", cmd.ProcessState)
	}
}
