//go:build unix

package bearer_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestReadKeyFileNotRegular: --auth-key naming a named pipe blocked
// `clawtool serve` at its start until someone wrote to the pipe, and
// then took what they wrote as the key. ReadKeyFile now opens without
// waiting and refuses anything but a regular file. Before the fix the
// attack hung until the guard below opened the pipe's write end and
// wrote a secret, which was taken. The control: the same secret in a
// regular file of mode 0600 is read.
func TestReadKeyFileNotRegular(t *testing.T) {
	secret := strings.Repeat("s", 40)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.key")
	if err := os.WriteFile(plain, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bearer.ReadKeyFile(plain); err != nil {
		t.Fatalf("control: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := bearer.ReadKeyFile(fifo); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Error("ReadKeyFile still waits on the pipe after a minute")
		if w, werr := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); werr == nil {
			w.WriteString(secret)
			w.Close()
		}
		err = <-done
	}
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("ReadKeyFile of a named pipe = %v, want refused naming it", err)
	}
}
