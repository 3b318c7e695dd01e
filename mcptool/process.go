package mcptool

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Process is an MCP server process that a [ProcessTransport] talks to,
// started by other means than os/exec (in a sandbox, say).
type Process struct {
	// Done is closed when the process has ended.
	Done <-chan struct{}
	// End says how the process ended, once Done is closed, as a phrase
	// ("exited with status 1; it was refused ..."); empty means it exited
	// with status 0.
	End func() string
	// Kill ends the process at once; it may be called more than once.
	Kill func()
}

// ProcessTransport is like [CommandTransport] for a process that start
// starts: it gets the read end of the process's standard input and the
// writer of its standard output, which it must close when the process
// has ended, and returns once the process is started. name names the
// server in messages. Closing the connection closes the process's
// standard input and, if it has not ended [DefaultTerminateDuration]
// later, kills it. When the server ends on its own, calls fail with an
// error that names it and says how it ended ([Process.End]).
func ProcessTransport(name string, start func(stdin *os.File, stdout io.WriteCloser) (*Process, error)) mcp.Transport {
	return &processTransport{name: name, start: start}
}

type processTransport struct {
	name   string
	start  func(stdin *os.File, stdout io.WriteCloser) (*Process, error)
	logger *slog.Logger // set by Connect

	mu  sync.Mutex
	end error
}

func (t *processTransport) ended() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end
}

// Connect starts the process.
func (t *processTransport) Connect(context.Context) (mcp.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW := io.Pipe()
	p, err := t.start(inR, outW)
	if err != nil {
		inR.Close()
		inW.Close()
		outW.Close()
		return nil, err
	}
	stop := func() error {
		inW.Close()
		timer := time.NewTimer(DefaultTerminateDuration)
		defer timer.Stop()
		select {
		case <-p.Done:
		case <-timer.C:
			p.Kill()
			// The connection reads no more: a copy of the process's
			// output still on its way (a sandboxed run ends only when
			// that copy has) would wait for a reader forever.
			outR.Close()
			<-p.Done
		}
		outR.Close()
		return nil
	}
	conn := newStreamConn(outR, inW, stop, false, t.logger)
	conn.ended = func(readErr error) error {
		what := "closed its standard output"
		timer := time.NewTimer(exitWait)
		defer timer.Stop()
		select {
		case <-p.Done:
			what = "exited with status 0"
			if e := p.End(); e != "" {
				what = e
			}
		case <-timer.C:
		}
		end := &endedError{what: "MCP server " + t.name + " " + what, err: readErr}
		t.mu.Lock()
		if t.end == nil {
			t.end = end
		}
		t.mu.Unlock()
		return end
	}
	return conn, nil
}
