package mcptool_test

import (
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/miniopenclaw/tool/mcptool"
)

// TestProcessCloseWhileItWrites: closing the connection to a process
// that still has output on its way ends, even when killing the process
// does not by itself end the copy of that output (a sandboxed run copies
// its command's output into the transport's pipe, and the run ends only
// when that copy does). The connection stops reading at Close, so the
// copy's write must be released by closing the pipe after the kill; before
// that, Close waited for the process forever. synctest reports that wait
// as a deadlock instead of hanging.
func TestProcessCloseWhileItWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var killed atomic.Bool
		var writeErr atomic.Value
		tr := mcptool.ProcessTransport("writer", func(stdin *os.File, stdout io.WriteCloser) (*mcptool.Process, error) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer stdout.Close()
				line := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n")
				for {
					if _, err := stdout.Write(line); err != nil {
						writeErr.Store(err)
						return
					}
				}
			}()
			return &mcptool.Process{
				Done: done,
				End:  func() string { return "killed" },
				Kill: func() { killed.Store(true) }, // the copy goes on after the kill
			}, nil
		})
		conn, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the process's writes now wait for a reader
		if err := conn.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !killed.Load() {
			t.Error("Close did not kill a process that did not end when its input closed")
		}
		if writeErr.Load() == nil {
			t.Error("the process's write did not fail after Close")
		}
	})
}

// TestProcessEndedBeforeTheFirstWrite: a server that fails to start ends
// its run, which closes its input, before the client has written
// anything and without writing any output. The handshake's first write
// then fails; the error says how the server ended (its Process.End),
// not only "broken pipe". This raced before: the read side, which said
// it, was not reached when the write failed first (a confined server
// whose image was missing was reported as "write |1: broken pipe").
func TestProcessEndedBeforeTheFirstWrite(t *testing.T) {
	const why = "could not start in a container (it never runs unconfined): no such image"
	tr := mcptool.ProcessTransport(`"gone"`, func(stdin *os.File, stdout io.WriteCloser) (*mcptool.Process, error) {
		stdin.Close() // the run ended: nothing reads the server's input
		done := make(chan struct{})
		close(done)
		return &mcptool.Process{Done: done, End: func() string { return why }, Kill: func() {}}, nil
		// stdout stays open: the read side sees no end, only the write fails
	})
	_, err := mcptool.Connect(t.Context(), tr)
	if err == nil {
		t.Fatal("Connect to a server that ended succeeded")
	}
	if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `"gone"`) {
		t.Errorf("Connect: %v\nwant it to name the server and say %q", err, why)
	}
}
