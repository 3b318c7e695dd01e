package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"
)

func instantiate(t *testing.T, bin []byte, c Config) *Instance {
	t.Helper()
	m, err := newRuntime(t, Options{}).Compile(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	in, err := m.Instantiate(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// The test modules are commands, but their _start is an export like any
// other: an Instance calls it, and keeps the memory it wrote.
func TestInstanceCalls(t *testing.T) {
	in := instantiate(t, helloModule(), Config{})
	for range 3 {
		if _, err := in.Call(context.Background(), "_start"); err != nil {
			t.Fatal(err)
		}
	}
	if b, ok := in.Read(16, 6); !ok || string(b) != "hello\n" {
		t.Fatalf("Read = %q, %v", b, ok)
	}
	if !in.Write(1000, []byte("kept")) {
		t.Fatal("Write failed")
	}
	if b, ok := in.Read(1000, 4); !ok || string(b) != "kept" {
		t.Fatalf("memory between calls: %q, %v", b, ok)
	}
	if _, ok := in.Read(in.MemorySize()-2, 4); ok {
		t.Error("a read past the end of memory succeeded")
	}
	if in.Write(in.MemorySize()-2, []byte("four")) {
		t.Error("a write past the end of memory succeeded")
	}
	if _, err := in.Call(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), `no function "nope"`) {
		t.Errorf("calling a missing export: %v", err)
	}
}

// A call that fails closes the instance, whatever the reason.
func TestInstanceFailedCallCloses(t *testing.T) {
	for _, tc := range []struct {
		name string
		bin  []byte
		c    Config
		ok   func(error) bool
	}{
		{"deadline", spinModule(), Config{}, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"output", floodModule(), Config{Output: 100}, func(err error) bool { return errors.Is(err, ErrOutputLimit) }},
		{"exit", exitModule(3), Config{}, func(err error) bool {
			var exit *sys.ExitError
			return errors.As(err, &exit) && exit.ExitCode() == 3
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := instantiate(t, tc.bin, tc.c)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // ok-wallclock: the deadline under test, not asserted
			defer cancel()
			_, err := in.Call(ctx, "_start")
			if !tc.ok(err) {
				t.Fatalf("error %v", err)
			}
			if _, err := in.Call(context.Background(), "_start"); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Errorf("a call after a failed one: %v", err)
			}
			if in.MemorySize() != 0 {
				t.Error("a closed instance reports memory")
			}
		})
	}
}

// Read-only directories are seen at their own paths; a file or a relative
// path is refused.
func TestReadOnlyMounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("granted"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, Options{})
	res := run(t, r, readModule("note.txt"), context.Background(), Config{ReadOnly: []string{dir}})
	if res.ExitCode != 0 || string(res.Stdout) != "granted" {
		t.Fatalf("reading a granted directory: %+v", res)
	}
	m, err := r.Compile(context.Background(), readModule("note.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "note.txt"), "relative"} {
		if _, err := m.Run(context.Background(), Config{ReadOnly: []string{bad}}); err == nil {
			t.Errorf("read-only path %q: no error", bad)
		}
		if _, err := m.Instantiate(context.Background(), Config{ReadOnly: []string{bad}}); err == nil {
			t.Errorf("read-only path %q: no error instantiating", bad)
		}
	}
}
