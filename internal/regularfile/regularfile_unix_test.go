//go:build unix

package regularfile_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/regularfile"
)

// TestOpenRefusesWithoutBlocking: a named pipe with no writer, a socket,
// a device and a directory are refused, each named, and the pipe's open
// returns instead of waiting for a writer (os.Open waited for ever: the
// control shows it waiting until a writer comes). A regular file opens.
func TestOpenRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("text"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The control: os.Open of the pipe waits for a writer.
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("control: os.Open of a pipe with no writer returned (%v); want it waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // the writer ends the wait
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-opened

	for _, tc := range []struct{ name, path, want string }{
		{"a named pipe", fifo, "named pipe"},
		{"a socket", sock, ""}, // opening a socket fails outright (ENXIO)
		{"a device", "/dev/null", "character device"},
		{"a directory", dir, "directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := regularfile.Open(tc.path)
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) opened it", tc.path)
			}
			if tc.want != "" && (!regularfile.IsNotRegular(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path)) {
				t.Fatalf("Open(%s) = %v, want a NotRegularError naming it %s", tc.path, err, tc.want)
			}
		})
	}
	if b, err := regularfile.Read(plain, 16); err != nil || string(b) != "text" {
		t.Fatalf("Read of a regular file = %q, %v", b, err)
	}
	if _, err := regularfile.Read(plain, 3); err == nil {
		t.Fatal("Read past its bound read the file")
	}
}
