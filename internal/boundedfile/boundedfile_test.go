package boundedfile_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/boundedfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		size    int
		max     int64
		tooLong bool
	}{
		{"empty", 0, 4, false},
		{"shorter", 3, 4, false},
		{"exactly the bound", 4, 4, false},
		{"one byte over", 5, 4, true},
		{"far over", 1 << 20, 4, true},
		{"zero bound, empty file", 0, 0, false},
		{"zero bound, one byte", 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			want := bytes.Repeat([]byte("x"), tc.size)
			if err := os.WriteFile(name, want, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := boundedfile.Read(name, tc.max)
			var tl *boundedfile.TooLargeError
			switch {
			case tc.tooLong && !errors.As(err, &tl):
				t.Fatalf("Read = %d bytes, %v; want a TooLargeError", len(got), err)
			case tc.tooLong:
				if tl.Name != name || tl.Max != tc.max || got != nil {
					t.Errorf("error %+v with %d bytes; want name %s, max %d, no bytes", tl, len(got), name, tc.max)
				}
				if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "longer than") {
					t.Errorf("message %q names neither the file nor the bound", err)
				}
			case err != nil || !bytes.Equal(got, want):
				t.Fatalf("Read = %d bytes, %v; want the %d bytes", len(got), err, tc.size)
			}
		})
	}
	if _, err := boundedfile.Read(filepath.Join(dir, "missing"), 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want os.ErrNotExist", err)
	}
}

// endless is a reader that never ends and counts what was read of it.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestReadAllStopsAtTheBound: a stream that never ends is refused after
// the bound and one byte, not read on.
func TestReadAllStopsAtTheBound(t *testing.T) {
	r := &endless{}
	_, err := boundedfile.ReadAll(r, "stream", 1000)
	var tl *boundedfile.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("err %v, want a TooLargeError", err)
	}
	if r.n != 1001 {
		t.Errorf("%d bytes read of an endless stream, want the bound and one byte, 1001", r.n)
	}
	if _, err := boundedfile.ReadAll(iotest{}, "broken", 10); err == nil || err.Error() != "broken read" {
		t.Errorf("a failing reader: %v, want its error", err)
	}
}

type iotest struct{}

func (iotest) Read([]byte) (int, error) { return 0, errors.New("broken read") }

var _ io.Reader = iotest{}
