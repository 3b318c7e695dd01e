// Package boundedfile reads files whose greatest size the caller knows,
// refusing a longer one while it is read rather than after.
package boundedfile

import (
	"fmt"
	"io"
	"os"
)

// TooLargeError is the error [Read] returns for a file longer than its
// bound. Callers that word the refusal their own way find it with
// errors.As.
type TooLargeError struct {
	Name string // the file, as the caller named it
	Max  int64  // the bound it passed
}

// Error says which file is longer than which bound.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: longer than %d bytes", e.Name, e.Max)
}

// Read reads the named file whole. It reads at most max bytes and one
// more: a longer file is refused with a *[TooLargeError] once that byte
// arrives, whatever the file's size, so the work and memory are bounded
// by max even for a file that grows or a pipe that never ends. Errors
// opening or reading the file are returned as os.Open and Read give them.
func Read(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, name, max)
}

// ReadAll is [Read] for an open reader: it reads r to its end, at most max
// bytes and one more, and refuses a longer stream with a *[TooLargeError]
// naming it name.
func ReadAll(r io.Reader, name string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Name: name, Max: max}
	}
	return b, nil
}
