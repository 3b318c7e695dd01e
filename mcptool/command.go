package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool/internal/showtext"
)

// Bounds of what a [Command] transport reports about a server that ended.
const (
	stderrTailBytes = 4 << 10 // standard error kept, from its end
	stderrTailLines = 20      // lines of it quoted in the error
	exitWait        = time.Second
)

// Command returns a transport that starts name with args and speaks MCP
// over its standard input and output (the stdio transport). The process's
// standard error is not shown; use [CommandTransport] to keep it. Closing
// the connection closes the process's standard input and, if it has not
// exited [DefaultTerminateDuration] later, terminates it.
//
// A line the server writes that is not a JSON-RPC message (a banner some
// servers print on start) is skipped, and logged to the client's logger
// ([WithClientLogger]). A request without params, or a result's input
// request without params (mcp-go servers send roots/list that way), is
// read as having empty params. When the server ends on its own, calls fail with
// an error that names the command and gives its exit status and the last
// lines of its standard error.
func Command(name string, args ...string) mcp.Transport {
	return CommandTransport(exec.Command(name, args...))
}

// CommandTransport is like [Command] for a prepared command, so that its
// environment, directory and standard error can be set. cmd must not have
// been started. What it writes to standard error still goes to
// cmd.Stderr, if set; cmd.WaitDelay, if zero, is set to one second, so
// that a grandchild holding standard error open cannot hold up the end.
func CommandTransport(cmd *exec.Cmd) mcp.Transport {
	return &commandTransport{cmd: cmd}
}

type commandTransport struct {
	cmd    *exec.Cmd
	logger *slog.Logger // set by Connect

	mu  sync.Mutex
	end error // how the server ended, once it has
}

// ended returns how the server ended, or nil while it has not.
func (t *commandTransport) ended() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end
}

// Connect starts the process.
func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	cmd := t.cmd
	tail := &tailBuffer{max: stderrTailBytes}
	if cmd.Stderr == nil {
		cmd.Stderr = tail
	} else {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, tail)
	}
	if cmd.WaitDelay == 0 {
		// A grandchild (npx starts node) may hold standard error open
		// after the server exits; do not let that hold up the exit.
		cmd.WaitDelay = time.Second
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", commandName(cmd), err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	conn := newStreamConn(stdout, stdin, func() error { return p.stop(stdin) }, false, t.logger)
	conn.ended = func(err error) error {
		end := p.ended(err, tail)
		t.mu.Lock()
		if t.end == nil {
			t.end = end
		}
		t.mu.Unlock()
		return end
	}
	return conn, nil
}

// process waits for a command once, for whoever needs its exit first.
type process struct {
	cmd     *exec.Cmd
	once    sync.Once
	exited  chan struct{}
	waitErr error
}

func (p *process) wait() <-chan struct{} {
	p.once.Do(func() {
		go func() {
			p.waitErr = p.cmd.Wait()
			close(p.exited)
		}()
	})
	return p.exited
}

// stop ends the process as the specification's stdio shutdown says:
// close its input, wait, SIGTERM, wait, SIGKILL.
func (p *process) stop(stdin io.Closer) error {
	stdin.Close()
	for _, signal := range []func() error{
		func() error { return nil },
		func() error { return p.cmd.Process.Signal(syscall.SIGTERM) },
		p.cmd.Process.Kill,
	} {
		_ = signal() // fails when the process is gone, which the wait sees
		timer := time.NewTimer(DefaultTerminateDuration)
		select {
		case <-p.wait():
			timer.Stop()
			return nil // the server's exit status is its own business now
		case <-timer.C:
		}
	}
	return fmt.Errorf("MCP server %s: did not exit after SIGKILL", commandName(p.cmd))
}

// ended describes the end of the server's output: it exited (with what
// status) or closed it, and what it last wrote to standard error. The
// error wraps readErr (io.EOF when the output just ended).
func (p *process) ended(readErr error, tail *tailBuffer) error {
	var what string
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	select {
	case <-p.wait():
		var ee *exec.ExitError
		switch {
		case p.waitErr == nil:
			what = "exited with status 0"
		case errors.As(p.waitErr, &ee):
			what = "exited: " + ee.ProcessState.String()
		default:
			what = "ended: " + p.waitErr.Error()
		}
	case <-timer.C:
		what = "closed its standard output"
	}
	return &endedError{
		what: fmt.Sprintf("MCP server %s %s", commandName(p.cmd), what),
		err:  readErr, tail: tail.lastLines(stderrTailLines),
	}
}

// endedError is how a server ended: what happened, the read error it
// wraps, then the end of its standard error, one line each, last.
type endedError struct {
	what string
	err  error
	tail string
}

func (e *endedError) Error() string {
	msg := e.what
	if e.err != nil {
		msg += " (" + e.err.Error() + ")"
	}
	if e.tail != "" {
		msg += "; the end of its standard error:\n" + e.tail
	}
	return msg
}

func (e *endedError) Unwrap() error { return e.err }

// commandName names a command for messages, shortened.
func commandName(cmd *exec.Cmd) string {
	return fmt.Sprintf("%q", shortText(strings.Join(cmd.Args, " "), 120))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return len(p), nil
}

// lastLines returns up to n of the last lines written, each indented by
// two spaces and cut to 300 bytes, with control characters (terminal
// escapes among them) and invalid UTF-8 written as escapes, so that the
// text is safe to print on a terminal.
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	text := strings.TrimSpace(string(t.b))
	t.mu.Unlock()
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = "  " + shortText(showtext.Text(strings.TrimRight(l, "\r")), 300)
	}
	return strings.Join(lines, "\n")
}
