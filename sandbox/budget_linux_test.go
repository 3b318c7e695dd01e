package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	// fallocatekeep DIR N SIZE allocates N files of SIZE bytes in a new
	// directory under DIR and keeps them.
	attacks["fallocatekeep"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[1])
		size, _ := strconv.ParseInt(a[2], 10, 64)
		dir, err := os.MkdirTemp(a[0], "fallocate-")
		if err != nil {
			return "", err
		}
		for i := range n {
			f, err := os.Create(fmt.Sprintf("%s/f%d", dir, i))
			if err != nil {
				return "", err
			}
			err = unix.Fallocate(int(f.Fd()), 0, 0, size)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("after %d files: %w", i, err)
			}
		}
		return fmt.Sprintf("allocated %d × %d bytes", n, size), nil
	}
	// plant DIR NAME CONTENT ... writes each NAME (relative to DIR) with
	// CONTENT, making the directories on its way.
	attacks["plant"] = func(a []string) (string, error) {
		for i := 1; i+1 < len(a); i += 2 {
			p := filepath.Join(a[0], a[i])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(a[i+1]), 0o755); err != nil {
				return "", err
			}
		}
		return "planted", nil
	}
	// applyupper UPPER WS applies the upper layer UPPER to WS as this
	// process's user, as a supervisor that is not root does.
	attacks["applyupper"] = func(a []string) (string, error) {
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		res, err := applyUpper(fd, a[1], nil, nil, 1<<20)
		if err == nil && len(res.notApplied) > 0 {
			err = errors.New(strings.Join(res.notApplied, "; "))
		}
		return "applied", err
	}
	// script SEED STEPS runs a random script of file operations in the
	// working directory (see runScript).
	attacks["script"] = func(a []string) (string, error) {
		seed, _ := strconv.ParseUint(a[0], 10, 64)
		steps, _ := strconv.Atoi(a[1])
		done, err := runScript(".", seed, steps)
		return fmt.Sprintf("%d operations", done), err
	}
}

// diskUse is the space the files under dir take on disk (st_blocks).
func diskUse(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

func hostFree(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	must(t, unix.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// TestWriteBudgetBoundsTheWorkspace is the attack: 16 × fallocate
// of 63 MiB (each under FileSize) into the workspace. The control runs it
// with the workspace bound directly (Policy.Without LayerWriteBudget): the
// host's disk takes 1 GiB. With the default budget of 256 MiB the fifth
// fallocate fails with ENOSPC inside the run, the outcome is write_limit,
// and nothing reaches the host's disk (du of the workspace, and statfs of
// its file system, measured on the host). A /tmp past its budget still
// ends with write_limit too.
func TestWriteBudgetBoundsTheWorkspace(t *testing.T) {
	f := newFixture(t)
	const n, size = 16, 63 << 20
	args := []string{"fallocatekeep", f.ws, strconv.Itoa(n), strconv.Itoa(size)}

	control := f.policy()
	control.Without = []Layer{LayerWriteBudget}
	r := f.sandboxed(t, context.Background(), DefaultNative(), control, args...)
	if !r.OK() || slices.Contains(r.Layers, LayerWriteBudget) {
		t.Fatalf("control: %s %q %q, layers %v", r.Summary(), r.Stdout, r.Stderr, r.Layers)
	}
	if used := diskUse(t, f.ws); used < n*size {
		t.Fatalf("control: the workspace holds %d bytes on the host, want at least %d", used, n*size)
	}
	ents, _ := filepath.Glob(filepath.Join(f.ws, "fallocate-*"))
	for _, e := range ents {
		must(t, os.RemoveAll(e))
	}

	p := f.policy()
	free := hostFree(t, f.ws)
	r = f.sandboxed(t, context.Background(), DefaultNative(), p, args...)
	if r.Outcome != WriteLimit || !strings.Contains(string(r.Stdout), "no space left") || !strings.Contains(string(r.Stdout), "after 4 files") {
		t.Errorf("with the budget: %s %q %q, want %s after 4 files with ENOSPC", r.Summary(), r.Stdout, r.Stderr, WriteLimit)
	}
	if !slices.Contains(r.Layers, LayerWriteBudget) {
		t.Errorf("layers %v lack %s", r.Layers, LayerWriteBudget)
	}
	if used := diskUse(t, f.ws); used > 1<<20 {
		t.Errorf("with the budget the workspace holds %d bytes on the host", used)
	}
	// Other tests may write beside this one: 64 MiB is a quarter of the
	// budget, a sixteenth of the attack.
	if after := hostFree(t, f.ws); free-after > 64<<20 {
		t.Errorf("the host's file system lost %d bytes during the run", free-after)
	}
	if len(r.NotApplied) == 0 || !strings.Contains(r.NotApplied[0], "write budget") {
		t.Errorf("NotApplied = %q, want the reason nothing was applied", r.NotApplied)
	}

	p.Limits.WriteBytes = 4 << 20
	r = f.sandboxed(t, context.Background(), DefaultNative(), p, "fallocate", "/tmp", "4", strconv.Itoa(2<<20))
	if r.Outcome != WriteLimit {
		t.Errorf("writing 8 MiB to /tmp with a 4 MiB budget: %s, want %s", r.Summary(), WriteLimit)
	}
}

// TestWriteBudgetAppliesAfterAFailure checks what a run that failed, or
// was killed, leaves: what it wrote before, as a direct write would.
func TestWriteBudgetAppliesAfterAFailure(t *testing.T) {
	f := newFixture(t)
	p := f.policy()
	p.AllowShell = true
	p.Env = DefaultEnv()
	r, err := Run(context.Background(), p, "sh", "-c", "echo partial > out; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != Exited || r.ExitCode != 3 {
		t.Fatalf("%s", r.Summary())
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "out")); err != nil || string(b) != "partial\n" {
		t.Errorf("a failed run's file: %q, %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err = Run(ctx, p, "sh", "-c", "echo late > late; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != TimedOut {
		t.Fatalf("%s", r.Summary())
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "late")); err != nil || string(b) != "late\n" {
		t.Errorf("a timed-out run's file: %q, %v", b, err)
	}
	st, err := os.Stat(filepath.Join(f.ws, "out"))
	must(t, err)
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != DefaultUID || sys.Gid != DefaultUID {
		t.Errorf("the applied file belongs to %d:%d, want the workspace's owner %d", sys.Uid, sys.Gid, DefaultUID)
	}
}

// An upperEntry is one entry of a hand-made upper layer.
type upperEntry struct {
	path, kind, data string // kind: f (data), d, l (target), w (whiteout), o (opaque dir), p (fifo), c (device), h (hard link to data)
	mode             uint32
}

func makeUpper(t *testing.T, dir string, es []upperEntry) {
	t.Helper()
	for _, e := range es {
		p := filepath.Join(dir, e.path)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		switch e.kind {
		case "f":
			must(t, os.WriteFile(p, []byte(e.data), 0o600))
			must(t, syscall.Chmod(p, mode))
		case "d", "o":
			must(t, os.Mkdir(p, 0o755))
			if e.kind == "o" {
				must(t, unix.Setxattr(p, "user.overlay.opaque", []byte("y"), 0))
			}
		case "l":
			must(t, os.Symlink(e.data, p))
		case "w":
			must(t, unix.Mknod(p, unix.S_IFCHR, 0))
		case "p":
			must(t, unix.Mkfifo(p, 0o644))
		case "c":
			must(t, unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))))
		case "h":
			must(t, os.Link(filepath.Join(dir, e.data), p))
		case "x":
			must(t, os.WriteFile(p, nil, 0o644))
			must(t, unix.Setxattr(p, "user.overlay.redirect", []byte("/elsewhere"), 0))
		}
	}
}

// treeOf describes the tree under dir, one line per entry, for
// comparisons: type, mode, owner, contents or target, and for a file with
// several links the first name of its inode.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	first := map[uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("%s %o %d:%d", rel, st.Mode, st.Uid, st.Gid)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + strconv.Quote(string(b))
			if st.Nlink > 1 {
				if f, ok := first[st.Ino]; ok {
					line += " =" + f
				} else {
					first[st.Ino] = rel
				}
			}
		case syscall.S_IFLNK:
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		out = append(out, line)
		return nil
	})
	must(t, err)
	return out
}

// TestApplyUpper applies hand-made upper layers, as the overlay writes
// them, to a workspace and compares the result: each kind of change, the
// protected paths (refused and reported), and what is refused outright (a
// fifo, a device, a setuid file, metadata the step does not model). A
// link out of the workspace is made, never followed: the file written
// under the same name as a host link replaces the link.
func TestApplyUpper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the apply tests make whiteouts (character devices 0:0) and need root")
	}
	protected := []string{".git/hooks", ".git/config", ".claude/commands"}
	for _, tc := range []struct {
		name       string
		host       []upperEntry // the workspace before
		upper      []upperEntry
		want       []string // treeOf the workspace after (owner 0:0 as the test runs)
		protected  []string
		notApplied []string
	}{
		{name: "create", upper: []upperEntry{{path: "a", kind: "f", data: "new"}, {path: "d/b", kind: "f", data: "b", mode: 0o755}},
			want: []string{`a 100644 0:0 "new"`, `d 40755 0:0`, `d/b 100755 0:0 "b"`}},
		{name: "modify", host: []upperEntry{{path: "a", kind: "f", data: "old"}, {path: "d/keep", kind: "f", data: "k"}},
			upper: []upperEntry{{path: "a", kind: "f", data: "old+more"}, {path: "d", kind: "d"}},
			want:  []string{`a 100644 0:0 "old+more"`, `d 40755 0:0`, `d/keep 100644 0:0 "k"`}},
		{name: "delete", host: []upperEntry{{path: "a", kind: "f", data: "x"}, {path: "d/e/f", kind: "f", data: "y"}},
			upper: []upperEntry{{path: "a", kind: "w"}, {path: "d", kind: "w"}},
			want:  nil},
		{name: "rename", host: []upperEntry{{path: "a", kind: "f", data: "x"}},
			upper: []upperEntry{{path: "a", kind: "w"}, {path: "b", kind: "f", data: "x"}},
			want:  []string{`b 100644 0:0 "x"`}},
		{name: "dir replaced by a file", host: []upperEntry{{path: "d/x", kind: "f", data: "x"}},
			upper: []upperEntry{{path: "d", kind: "f", data: "now a file"}},
			want:  []string{`d 100644 0:0 "now a file"`}},
		{name: "file replaced by a dir", host: []upperEntry{{path: "d", kind: "f", data: "file"}},
			upper: []upperEntry{{path: "d", kind: "o"}, {path: "d/x", kind: "f", data: "x"}},
			want:  []string{`d 40755 0:0`, `d/x 100644 0:0 "x"`}},
		{name: "dir replaced whole (opaque)", host: []upperEntry{{path: "d/old", kind: "f", data: "o"}},
			upper: []upperEntry{{path: "d", kind: "o"}, {path: "d/new", kind: "f", data: "n"}},
			want:  []string{`d 40755 0:0`, `d/new 100644 0:0 "n"`}},
		{name: "symlink", host: []upperEntry{{path: "l", kind: "f", data: "was a file"}},
			upper: []upperEntry{{path: "l", kind: "l", data: "target"}, {path: "m", kind: "l", data: "../../etc"}},
			want:  []string{`l 120777 0:0 -> target`, `m 120777 0:0 -> ../../etc`}},
		{name: "chmod", host: []upperEntry{{path: "a", kind: "f", data: "x"}},
			upper: []upperEntry{{path: "a", kind: "f", data: "x", mode: 0o600}},
			want:  []string{`a 100600 0:0 "x"`}},
		{name: "hard link", upper: []upperEntry{{path: "a", kind: "f", data: "x"}, {path: "b", kind: "h", data: "a"}},
			want: []string{`a 100644 0:0 "x"`, `b 100644 0:0 "x" =a`}},
		{name: "a link out of the workspace is replaced, not followed", host: []upperEntry{{path: "out", kind: "l", data: "/etc/hostname"}, {path: "dir", kind: "l", data: "/etc"}},
			upper: []upperEntry{{path: "out", kind: "f", data: "mine"}, {path: "dir", kind: "o"}, {path: "dir/passwd", kind: "f", data: "pwned"}},
			want:  []string{`dir 40755 0:0`, `dir/passwd 100644 0:0 "pwned"`, `out 100644 0:0 "mine"`}},
		{name: "protected", host: []upperEntry{{path: ".git/config", kind: "f", data: "orig"}, {path: ".git/objects/o", kind: "f", data: "o"}},
			upper: []upperEntry{{path: ".git", kind: "d"}, {path: ".git/config", kind: "f", data: "[core]\n\tfsmonitor = touch PWNED\n"},
				{path: ".git/hooks/pre-commit", kind: "f", data: "#!/bin/sh\n"}, {path: ".git/objects/p", kind: "f", data: "p"},
				{path: ".CLAUDE", kind: "d"}, {path: ".CLAUDE/Commands/x.md", kind: "f", data: "x"}},
			want:      []string{`.CLAUDE 40755 0:0`, `.git 40755 0:0`, `.git/config 100644 0:0 "orig"`, `.git/objects 40755 0:0`, `.git/objects/o 100644 0:0 "o"`, `.git/objects/p 100644 0:0 "p"`},
			protected: []string{".claude/commands", ".git/config", ".git/hooks"}},
		{name: "a parent of a protected path replaced", host: []upperEntry{{path: ".git/hooks/h", kind: "f", data: "h"}},
			upper:     []upperEntry{{path: ".git", kind: "o"}, {path: ".git/hooks/pre-commit", kind: "f", data: "evil"}},
			want:      []string{`.git 40755 0:0`, `.git/hooks 40755 0:0`, `.git/hooks/h 100644 0:0 "h"`},
			protected: []string{".git/config", ".git/hooks"}},
		{name: "a .git file planted where a directory was expected", upper: []upperEntry{{path: ".git", kind: "f", data: "gitdir: evil\n"}},
			want: nil, protected: []string{".git/config", ".git/hooks"}},
		{name: "a parent of a protected path removed", host: []upperEntry{{path: ".claude/commands/c", kind: "f", data: "c"}},
			upper:     []upperEntry{{path: ".claude", kind: "w"}},
			want:      []string{`.claude 40755 0:0`, `.claude/commands 40755 0:0`, `.claude/commands/c 100644 0:0 "c"`},
			protected: []string{".claude/commands"}},
		{name: "fifo, device, setuid, unknown metadata", upper: []upperEntry{{path: "p", kind: "p"}, {path: "c", kind: "c"},
			{path: "s", kind: "f", data: "x", mode: 0o4755}, {path: "g", kind: "f", data: "x", mode: 0o2755}, {path: "r", kind: "x"}, {path: "ok", kind: "f", data: "ok"}},
			want:       []string{`ok 100644 0:0 "ok"`},
			notApplied: []string{"c: a device is not applied", "g: a setuid or setgid file is not applied", "p: a fifo is not applied", "r: overlay metadata redirect is not modelled", "s: a setuid or setgid file is not applied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, upper := t.TempDir(), t.TempDir()
			makeUpper(t, ws, tc.host)
			makeUpper(t, upper, tc.upper)
			fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			must(t, err)
			defer unix.Close(fd)
			res, err := applyUpper(fd, ws, protected, &[2]int{0, 0}, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got := treeOf(t, ws); !slices.Equal(got, tc.want) {
				t.Errorf("workspace after:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !slices.Equal(res.protected, tc.protected) {
				t.Errorf("protected %q, want %q", res.protected, tc.protected)
			}
			slices.Sort(res.notApplied)
			if !slices.Equal(res.notApplied, tc.notApplied) {
				t.Errorf("not applied %q, want %q", res.notApplied, tc.notApplied)
			}
			if _, err := os.Stat("/etc/passwd"); err != nil || fileHas("/etc/passwd", "pwned")() {
				t.Fatal("the apply step wrote outside the workspace")
			}
		})
	}
}

// TestApplyUpperBounds checks the apply step's own bounds: bytes past
// the budget and entries deeper than maxApplyDepth are not applied.
func TestApplyUpperBounds(t *testing.T) {
	ws, upper := t.TempDir(), t.TempDir()
	makeUpper(t, upper, []upperEntry{{path: "a", kind: "f", data: strings.Repeat("x", 600)}, {path: "b", kind: "f", data: strings.Repeat("y", 600)}})
	deep := upper
	for range maxApplyDepth + 1 {
		deep = filepath.Join(deep, "d")
	}
	must(t, os.MkdirAll(deep, 0o755))
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	res, err := applyUpper(fd, ws, nil, nil, 1000)
	if err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("err = %v, want the byte bound", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a")); err != nil {
		t.Errorf("the file within the bound was not applied: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "b")); err == nil {
		t.Error("the file past the bound was applied")
	}
	if len(res.notApplied) != 1 || !strings.HasPrefix(res.notApplied[0], "b: past") {
		t.Errorf("not applied %q", res.notApplied)
	}
	ws2 := t.TempDir()
	must(t, os.Remove(filepath.Join(upper, "b")))
	res, err = applyUpper(fd, ws2, nil, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.notApplied) != 1 || !strings.Contains(res.notApplied[0], "deeper than") {
		t.Errorf("not applied %q, want the depth bound", res.notApplied)
	}
}

// runScript runs steps random file operations in dir, chosen from seed
// and from what dir holds (so that two runs that see the same tree do the
// same): create, append, overwrite, mkdir, remove, remove a tree, rename
// (a directory the overlay cannot rename, EXDEV, is copied and removed as
// mv does), replace a file by a directory and back, symlink, chmod, hard
// link. A file with several links is not written (the overlay copies one
// name up, a direct write changes every name: documented).
func runScript(dir string, seed uint64, steps int) (int, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"a", "b", "c", "d", "e"}
	done := 0
	for range steps {
		var files, dirs, all []string
		dirs = append(dirs, ".")
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			all = append(all, rel)
			switch {
			case d.Type().IsDir():
				dirs = append(dirs, rel)
			case d.Type().IsRegular():
				files = append(files, rel)
			}
			return nil
		})
		pick := func(l []string) string {
			if len(l) == 0 {
				return ""
			}
			return l[rng.IntN(len(l))]
		}
		fresh := filepath.Join(pick(dirs), names[rng.IntN(len(names))])
		_, err := os.Lstat(filepath.Join(dir, fresh))
		free := errors.Is(err, fs.ErrNotExist)
		data := strings.Repeat(strconv.Itoa(rng.IntN(1000)), 1+rng.IntN(300))
		linked := func(p string) bool {
			var st syscall.Stat_t
			return syscall.Lstat(filepath.Join(dir, p), &st) == nil && st.Nlink > 1
		}
		var err2 error
		switch op := rng.IntN(12); {
		case op == 0 && free:
			err2 = os.WriteFile(filepath.Join(dir, fresh), []byte(data), 0o644)
		case op == 1 && len(files) > 0:
			if p := pick(files); !linked(p) {
				f, err := os.OpenFile(filepath.Join(dir, p), os.O_WRONLY|os.O_APPEND, 0)
				if err == nil {
					_, err = f.WriteString(data)
					f.Close()
				}
				err2 = err
			}
		case op == 2 && len(files) > 0:
			if p := pick(files); !linked(p) {
				err2 = os.WriteFile(filepath.Join(dir, p), []byte(data), 0)
			}
		case op == 3 && free:
			err2 = os.Mkdir(filepath.Join(dir, fresh), 0o755)
		case op == 4 && len(all) > 0:
			if p := pick(all); !slices.Contains(dirs, p) {
				err2 = os.Remove(filepath.Join(dir, p))
			}
		case op == 5 && len(dirs) > 1:
			err2 = os.RemoveAll(filepath.Join(dir, pick(dirs[1:])))
		case op == 6 && len(all) > 0 && free:
			from := pick(all)
			if fresh == from || strings.HasPrefix(fresh, from+"/") || hasLinks(filepath.Join(dir, from)) && slices.Contains(dirs, from) {
				break
			}
			err2 = os.Rename(filepath.Join(dir, from), filepath.Join(dir, fresh))
			if errors.Is(err2, syscall.EXDEV) {
				err2 = copyTree(filepath.Join(dir, from), filepath.Join(dir, fresh))
				if err2 == nil {
					err2 = os.RemoveAll(filepath.Join(dir, from))
				}
			}
		case op == 7 && len(files) > 0:
			p := pick(files)
			if err2 = os.Remove(filepath.Join(dir, p)); err2 == nil {
				err2 = os.Mkdir(filepath.Join(dir, p), 0o755)
			}
		case op == 8 && len(dirs) > 1:
			p := pick(dirs[1:])
			if err2 = os.RemoveAll(filepath.Join(dir, p)); err2 == nil {
				err2 = os.WriteFile(filepath.Join(dir, p), []byte(data), 0o600)
			}
		case op == 9 && free:
			err2 = os.Symlink(pick(append(all, "../outside", "/etc/passwd")), filepath.Join(dir, fresh))
		case op == 10 && len(all) > 0:
			p := pick(all)
			modes := []os.FileMode{0o644, 0o600, 0o640, 0o444}
			if slices.Contains(dirs, p) {
				modes = []os.FileMode{0o755, 0o700, 0o750}
			} else if !slices.Contains(files, p) {
				break // a symbolic link: chmod would follow it
			}
			err2 = os.Chmod(filepath.Join(dir, p), modes[rng.IntN(len(modes))])
		case op == 11 && len(files) > 0 && free:
			// Landlock refuses a link across directories (no refer right)
			// with EXDEV, in both runs alike.
			if err2 = os.Link(filepath.Join(dir, pick(files)), filepath.Join(dir, fresh)); errors.Is(err2, syscall.EXDEV) {
				err2 = nil
			}
		default:
			continue
		}
		if errors.Is(err2, fs.ErrPermission) {
			// A file or directory the script made read-only: refused in
			// both runs alike.
			err2 = nil
		}
		if err2 != nil {
			return done, err2
		}
		done++
	}
	return done, nil
}

// hasLinks reports whether the tree at p holds a file with several links.
func hasLinks(p string) bool {
	found := false
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		var st syscall.Stat_t
		if err == nil && d.Type().IsRegular() && syscall.Lstat(q, &st) == nil && st.Nlink > 1 {
			found = true
		}
		return nil
	})
	return found
}

// copyTree copies the tree at from to to, as mv does across file systems:
// contents, modes, symbolic links.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type().IsDir():
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				return err
			}
			return os.Chmod(dst, info.Mode().Perm())
		}
	})
}

// seedTree makes the starting tree of the property test in ws.
func seedTree(t *testing.T, ws string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 12 {
		p := filepath.Join(ws, []string{"a", "b", "c", "d/a", "d/b", "e/c", "e/d/a"}[rng.IntN(7)])
		if i%4 == 0 {
			os.MkdirAll(p, 0o755)
			continue
		}
		if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
			os.WriteFile(p, []byte(strings.Repeat("s", rng.IntN(100))), 0o644)
		}
	}
	chownAll(t, ws)
}

// TestWriteBudgetMatchesDirectWrites is the property of the apply step:
// the same random script of file operations, run once with the workspace
// bound directly and once through the overlay and the apply step, leaves
// the same tree (types, modes, owners, contents, link targets, hard-link
// groups), for every seed.
func TestWriteBudgetMatchesDirectWrites(t *testing.T) {
	f := newFixture(t)
	for seed := range uint64(12) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			var trees [2][]string
			for i, without := range [][]Layer{{LayerWriteBudget}, nil} {
				ws := filepath.Join(f.base, fmt.Sprintf("prop-%d-%d", seed, i))
				must(t, os.Mkdir(ws, 0o755))
				defer os.RemoveAll(ws)
				seedTree(t, ws, seed)
				p := f.policy()
				p.Workspace = ws
				p.Without = without
				r := f.sandboxed(t, context.Background(), DefaultNative(), p, "script", strconv.FormatUint(seed, 10), "60")
				if !r.OK() {
					t.Fatalf("script (without %v): %s %q %q", without, r.Summary(), r.Stdout, r.Stderr)
				}
				if len(r.NotApplied) > 0 || len(r.ProtectedChanged) > 0 {
					t.Errorf("not applied %q, protected %q", r.NotApplied, r.ProtectedChanged)
				}
				trees[i] = treeOf(t, ws)
			}
			if !slices.Equal(trees[0], trees[1]) {
				t.Errorf("direct:\n%s\nthrough the overlay:\n%s", strings.Join(trees[0], "\n"), strings.Join(trees[1], "\n"))
			}
		})
	}
}

// TestWriteBudgetFailsClosed gives the run a workspace on which the
// overlay cannot be mounted: a directory of an overlay stacked on another
// overlay, at the kernel's stacking depth already (2), so that one more
// fails. The run is refused, naming the write budget, before anything
// runs; the control, a policy that opts out (Policy.Without
// LayerWriteBudget), runs in the same workspace and writes it directly.
func TestWriteBudgetFailsClosed(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Fatal("stacking overlays on the host needs root")
	}
	base, err := os.MkdirTemp("", "clawtool-stack-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	for _, d := range []string{"l1", "u1", "w1", "m1", "u2", "w2", "m2"} {
		must(t, os.Mkdir(filepath.Join(base, d), 0o755))
	}
	for i, lower := range []string{"l1", "m1"} {
		n := strconv.Itoa(i + 1)
		opts := "lowerdir=" + filepath.Join(base, lower) + ",upperdir=" + filepath.Join(base, "u"+n) + ",workdir=" + filepath.Join(base, "w"+n)
		target := filepath.Join(base, "m"+n)
		must(t, unix.Mount("overlay", target, "overlay", 0, opts))
		t.Cleanup(func() { unix.Unmount(target, unix.MNT_DETACH) })
	}
	ws := filepath.Join(base, "m2", "ws")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Chown(ws, DefaultUID, DefaultUID))

	p := Policy{Workspace: ws, Env: DefaultEnv()}
	r, err := Run(context.Background(), p, "sh", "-c", "echo ran > ran")
	if err == nil || !strings.Contains(err.Error(), "workspace write budget") || !strings.Contains(err.Error(), `"write_budget" in Without`) {
		t.Errorf("on a workspace the overlay cannot stack on: %v %+v, want a refusal naming the write budget", err, r)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the refused run ran")
	}
	p.Without = []Layer{LayerWriteBudget}
	r, err = Run(context.Background(), p, "sh", "-c", "echo ran > ran")
	if err != nil || !r.OK() {
		t.Fatalf("control, opted out: %v %+v", err, r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ran")); string(b) != "ran\n" {
		t.Errorf("control: the workspace holds %q", b)
	}
}

// TestApplyUpperAsItsOwner applies, as a user that is not root (uid
// 65534, the attacker binary started with those credentials), an upper
// layer the run made hard to read: a directory and a file of mode 0000.
// The step gives itself the rights it needs on the upper layer and sets
// each directory's mode after its entries, so the workspace ends as the
// run left it.
func TestApplyUpperAsItsOwner(t *testing.T) {
	f := newFixture(t)
	upper := filepath.Join(f.base, "upper")
	makeUpper(t, upper, []upperEntry{{path: "d/secret", kind: "f", data: "s"}, {path: "d/sub/x", kind: "f", data: "x"}, {path: "top", kind: "f", data: "t"}})
	for _, p := range []string{"d/secret", "d/sub", "d"} {
		must(t, os.Chmod(filepath.Join(upper, p), 0))
	}
	chownAll(t, upper)
	out := f.unsandboxed(t, asNobody, "applyupper", upper, f.ws)
	if !strings.HasPrefix(out, "OK") {
		t.Fatalf("apply as uid %d: %q", DefaultUID, out)
	}
	want := []string{`d 40000 65534:65534`, `d/secret 100000 65534:65534 "s"`, `d/sub 40000 65534:65534`, `d/sub/x 100644 65534:65534 "x"`, `top 100644 65534:65534 "t"`}
	if got := treeOf(t, f.ws); !slices.Equal(got, want) {
		t.Errorf("workspace after:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
