// Package regularfile opens the files a safety layer reads its
// configuration, keys or records from, refusing anything but a regular
// file, and without blocking on what it refuses: a named pipe (FIFO)
// with no writer blocked the open, and so a policy reload, for ever;
// one with a writer fed whatever the writer chose, and a device read
// without end.
package regularfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/miniopenclaw/tool/internal/boundedfile"
)

// NotRegularError is the error [Open] returns for a file that is not a
// regular file.
type NotRegularError struct {
	Name string      // the file, as the caller named it
	Mode fs.FileMode // its type, as the opened descriptor has it
}

// Error names the file, what it is, and what to give instead.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file: refused (reading it could block or never end, or read what another process writes into it); give a regular file", e.Name, kind(e.Mode))
}

// kind names a file type for a person.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "of type " + m.Type().String()
}

// Open opens name for reading. See [OpenFile].
func Open(name string) (*os.File, fs.FileInfo, error) {
	return OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name as [os.OpenFile] does with flag and perm, adding
// (on Unix) O_NONBLOCK, so that opening a named pipe or a device does not
// wait, and O_NOCTTY; then it reads the type of the opened descriptor
// (fstat, so a file swapped in after a check by name is the one judged)
// and refuses anything but a regular file with a *[NotRegularError],
// closing it. It returns the open file and what fstat said of it. For a
// regular file O_NONBLOCK changes nothing.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(name, flag|openFlags, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Name: name, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// Read reads the regular file name whole ([Open]), at most max bytes: a
// longer one is refused with a *[boundedfile.TooLargeError].
func Read(name string, max int64) ([]byte, error) {
	f, _, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return boundedfile.ReadAll(f, name, max)
}

// IsNotRegular reports whether err says a file was not a regular file.
func IsNotRegular(err error) bool {
	_, ok := errors.AsType[*NotRegularError](err)
	return ok
}
