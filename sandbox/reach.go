package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symbolic links reachesInto follows, as the kernel's
// own limit does (40).
const maxLinks = 40

// reachesInto reports whether opening path, as the kernel resolves it,
// looks up a name that lies in dir or below it (dir with its symbolic
// links resolved): the name itself, a directory on its way, or any
// symbolic link it passes through and the names that link leads to. A run
// whose workspace is dir can change any such name, so what path opens is
// the run's to choose. A path that cannot be followed to its end (too many
// links, a link that cannot be read) is reported as reaching in: the check
// fails closed.
func reachesInto(path, dir string) bool {
	if !filepath.IsAbs(path) {
		return true
	}
	// The names looked up below are each in a directory already resolved
	// (no link left in it), so each is compared with dir as it stands;
	// only dir is resolved, once.
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	} else {
		dir = filepath.Clean(dir)
	}
	in := func(name string) bool { return within(name, dir) }
	resolved, rest := "/", strings.Split(path, "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		name := filepath.Join(resolved, c)
		if in(name) {
			return true
		}
		fi, err := os.Lstat(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Nothing further exists to follow; the run would
				// need to make it, which the names checked so far
				// (outside dir) do not let it.
				return false
			}
			return true
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = name
			continue
		}
		if links++; links > maxLinks {
			return true
		}
		target, err := os.Readlink(name)
		if err != nil {
			return true
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return in(resolved)
}

// within reports whether name is dir or lies below it, comparing the
// two as they are written.
func within(name, dir string) bool {
	rel, err := filepath.Rel(dir, name)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
