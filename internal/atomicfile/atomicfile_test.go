package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(string, []byte) error
	}{
		{"Write", Write},
		{"WriteSynced", WriteSynced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			for _, content := range [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2,"b":[1,2,3]}`), {}} {
				if err := tc.write(path, content); err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(got, content) {
					t.Fatalf("read %q, %v; want %q", got, err, content)
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			if names := list(t, dir); len(names) != 1 || names[0] != "state.json" {
				t.Errorf("directory holds %q, want only state.json (no temporary file left)", names)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(m) != 1 {
				t.Errorf("*.json matches %q", m)
			}
		})
	}
}

// A failed write leaves the old content and no temporary file behind.
func TestWriteFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteSynced(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	// The rename fails: a directory stands where a file is renamed to.
	blocked := filepath.Join(dir, "blocked")
	if err := os.Mkdir(blocked, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, []byte("new")); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded")
	}
	if names := list(t, dir); len(names) != 2 {
		t.Errorf("directory holds %q after a failed write, want state.json and blocked", names)
	}
	if err := Write(filepath.Join(dir, "missing", "state.json"), []byte("x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("write into a missing directory: %v, want ErrNotExist", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("content %q", got)
	}
}

// Readers racing with writers see one whole version or another.
func TestWriteReadersSeeWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	a, b := bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<17)
	if err := Write(path, a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			data := a
			if i%2 == 0 {
				data = b
			}
			if err := Write(path, data); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 200 {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read a part: %d bytes", len(got))
		}
	}
	wg.Wait()
}

func list(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
