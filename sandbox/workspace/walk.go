package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Bounds on the walks glob and grep make.
const (
	// MaxWalkEntries is the most directory entries one glob or grep
	// looks at; a walk that reaches it stops and says so.
	MaxWalkEntries = 100_000
	// MaxWalkDepth is the deepest a grep descends below its start.
	MaxWalkDepth = 64
)

// ctxCheckEvery is how many entries a walk looks at between two looks at
// its context.
const ctxCheckEvery = 64

// A walk is the traversal of one glob or grep. It follows no symbolic
// link (an entry that is a link is listed or skipped, never entered), so
// every path it reaches is a resolved path and no directory is reached
// twice through links; it still enters each directory at most once, by
// device and inode, against bind mounts. It opens each directory
// relative to its parent without following links, so a directory
// swapped for a link while it runs is not entered. It stops after
// MaxWalkEntries entries, when its context ends, or when its caller has
// enough.
type walk struct {
	ts    *Toolset
	ctx   context.Context
	steps int
	seen  map[dirKey]bool
	// note says why the walk stopped early, for the model; err is the
	// context's error when that is why.
	note string
	err  error
}

type dirKey struct{ dev, ino uint64 }

func (ts *Toolset) newWalk(ctx context.Context) *walk {
	return &walk{ts: ts, ctx: ctx, seen: map[dirKey]bool{}}
}

// stopped reports whether the walk has stopped.
func (w *walk) stopped() bool { return w.note != "" || w.err != nil }

// step counts one entry looked at, and reports whether the walk may go on.
func (w *walk) step() bool {
	if w.stopped() {
		return false
	}
	w.steps++
	if w.steps > MaxWalkEntries {
		w.note = fmt.Sprintf("[stopped after looking at %d entries; narrow the pattern or the path]", MaxWalkEntries)
		return false
	}
	if w.steps%ctxCheckEvery == 1 {
		if err := w.ctx.Err(); err != nil {
			w.err = err
			return false
		}
	}
	return true
}

// enter reports whether dir has not been entered before, and marks it.
func (w *walk) enter(dir *os.File) bool {
	st, err := dir.Stat()
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	k := dirKey{uint64(sys.Dev), uint64(sys.Ino)}
	if w.seen[k] {
		return false
	}
	w.seen[k] = true
	return true
}

// readDir returns the entries of dir sorted by name, counting each as a
// step; when the walk stops on the way it returns what it read.
func (w *walk) readDir(dir *os.File) []fs.DirEntry {
	var all []fs.DirEntry
	for {
		ents, err := dir.ReadDir(256)
		for _, e := range ents {
			if !w.step() {
				break
			}
			all = append(all, e)
		}
		if w.stopped() || err != nil || len(ents) == 0 {
			break
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all
}

// subdir opens the entry e of dir, the directory rel, when it is a
// directory the walk has not entered; the caller closes it.
func (w *walk) subdir(dir *os.File, rel string, e fs.DirEntry) (*os.File, bool) {
	if !e.IsDir() {
		return nil, false
	}
	sub, err := w.ts.openChild(dir, rel, e.Name(), os.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return nil, false
	}
	if !w.enter(sub) {
		sub.Close()
		return nil, false
	}
	return sub, true
}

// glob appends to out the paths below dir (the resolved directory rel)
// that match segs, one path.Match pattern per path element, in lexical
// order, until out holds limit paths.
func (w *walk) glob(dir *os.File, rel string, segs []string, out *[]string, limit int) {
	for _, e := range w.readDir(dir) {
		if len(*out) >= limit || w.stopped() {
			return
		}
		if ok, _ := path.Match(segs[0], e.Name()); !ok {
			continue
		}
		child := path.Join(rel, e.Name())
		if len(segs) == 1 {
			*out = append(*out, child)
			continue
		}
		if sub, ok := w.subdir(dir, rel, e); ok {
			w.glob(sub, child, segs[1:], out, limit)
			sub.Close()
		}
	}
}

// files calls visit with every regular file below dir (the resolved
// directory rel), in lexical order, skipping .git directories and
// directories deeper than MaxWalkDepth, until visit returns false.
func (w *walk) files(dir *os.File, rel string, depth int, visit func(dir *os.File, rel string, e fs.DirEntry) bool) bool {
	for _, e := range w.readDir(dir) {
		if w.stopped() {
			return false
		}
		switch {
		case e.IsDir():
			if e.Name() == ".git" {
				continue
			}
			if depth >= MaxWalkDepth {
				continue
			}
			sub, ok := w.subdir(dir, rel, e)
			if !ok {
				continue
			}
			more := w.files(sub, path.Join(rel, e.Name()), depth+1, visit)
			sub.Close()
			if !more {
				return false
			}
		case e.Type().IsRegular():
			if !visit(dir, rel, e) {
				return false
			}
		}
	}
	return true
}

// globSegments splits a glob pattern into the literal directory it
// starts in and the patterns of the elements after it. The literal part
// is a path like any other argument (resolved, links followed); the
// elements after the first wildcard are matched against directory
// entries, so ".", ".." and empty ones are refused there.
func globSegments(pattern string) (dir string, segs []string, err error) {
	all := strings.Split(pattern, "/")
	i := 0
	for i < len(all) && !hasMeta(all[i]) {
		i++
	}
	if i == len(all) {
		return pattern, nil, nil
	}
	for _, s := range all[i:] {
		if s == "" || s == "." || s == ".." {
			return "", nil, fmt.Errorf("pattern %q has an empty, . or .. element after a wildcard; put those before the first wildcard", pattern)
		}
	}
	return strings.Join(all[:i], "/"), all[i:], nil
}

// hasMeta reports whether s has path.Match syntax.
func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }
