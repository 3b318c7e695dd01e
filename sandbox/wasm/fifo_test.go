package wasm

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFifoDoesNotHang: a fifo in a module's workspace (made by a
// sandboxed run that binds the workspace directly, or by anyone else)
// blocked the module's open until a writer came: the call ran past its
// deadline, in a thread nothing interrupts, for as long as no writer
// came. The control opens the fifo through the root's own file system,
// as the mount did before, and it blocks until the test opens the
// writing end; through the module's mount the open is refused at once,
// and the module's run ends before its deadline is long past.
func TestFifoDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	t.Run("control: the root's own file system blocks", func(t *testing.T) {
		opened := make(chan error, 1)
		go func() {
			f, err := root.FS().Open("f")
			if err == nil {
				f.Close()
			}
			opened <- err
		}()
		select {
		case err := <-opened:
			t.Fatalf("the open did not block (%v): the control shows nothing", err)
		case <-time.After(300 * time.Millisecond):
		}
		// Release it: a writer opens the fifo.
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		<-opened
	})
	t.Run("the module's mount refuses it", func(t *testing.T) {
		if _, err := (regularFS{root}).Open("f"); err == nil {
			t.Error("the fifo was opened")
		}
		r := newRuntime(t, Options{})
		m, err := r.Compile(context.Background(), readModule("f"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := m.Run(ctx, Config{Workspace: dir})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			w, _ := os.OpenFile(fifo, os.O_WRONLY, 0) // release the blocked open
			if w != nil {
				w.Close()
			}
			t.Fatal("the module's run hung on the fifo past its deadline")
		}
	})
}
