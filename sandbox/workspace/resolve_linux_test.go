package workspace

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/miniopenclaw/tool/sandbox"
)

// resolveTree is the tree the resolver tests walk: directories, files
// and links of every kind, inside the workspace ws and out of it.
func resolveTree(t testing.TB) (ws string, ts *Toolset) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	for _, d := range []string{"docs/sub", "secrets/inner"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.WriteFile(filepath.Join(ws, "docs", "a"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(ws, "secrets", "key"), []byte("k"), 0o644)
	os.WriteFile(filepath.Join(base, "outside"), []byte("o"), 0o644)
	for name, target := range map[string]string{
		"docs/s":     "../secrets",
		"docs/k":     "../secrets/key",
		"docs/deep":  "../secrets/inner",
		"docs/up":    "..",
		"docs/dot":   ".",
		"docs/c1":    "c2",
		"docs/c2":    "sub/../c3",
		"docs/c3":    "../secrets",
		"docs/loop":  "loop",
		"docs/out":   "../../outside",
		"docs/abs":   filepath.Join(ws, "secrets"),
		"docs/dang":  "../secrets/none",
		"docs/bs":    `..\secrets`,
		"docs/miss":  "missing/../../secrets",
		"docs/file/": "a", // a link named "file" (the slash is dropped)
		"pub":        "docs/../secrets",
		"Secrets":    "secrets",
	} {
		os.Symlink(target, filepath.Join(ws, strings.TrimSuffix(name, "/")))
	}
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ws, ts
}

func TestResolve(t *testing.T) {
	_, ts := resolveTree(t)
	tests := []struct {
		p    string
		mode linkMode
		want string // the resolved path, or "!" and a part of the refusal
	}{
		{"", followLinks, "."},
		{".", followLinks, "."},
		{"./docs//a", followLinks, "docs/a"},
		{"docs/a/", followLinks, "!a file, as a directory"},
		{"docs/a/.", followLinks, "!a file, as a directory"},
		{"docs/sub/", followLinks, "docs/sub"},
		{"docs/s/key", followLinks, "secrets/key"},
		{"docs/k", followLinks, "secrets/key"},
		{"docs/deep/../key", followLinks, "secrets/key"}, // physical ..
		{"docs/up/secrets/key", followLinks, "secrets/key"},
		{"docs/dot/dot/dot/a", followLinks, "docs/a"},
		{"docs/c1/key", followLinks, "secrets/key"},
		{"pub/key", followLinks, "secrets/key"},
		{"Secrets/key", followLinks, "secrets/key"},
		{"docs/new/file.txt", followLinks, "docs/new/file.txt"},
		{"docs/s/new", followLinks, "secrets/new"},
		{"docs/new/../a", followLinks, "!climbs out of docs/new, which does not exist"},
		{"docs/miss", followLinks, "!does not exist"},
		{"docs/dang", followLinks, "!which does not exist"},
		{"docs/loop", followLinks, "!more than 40 symbolic links"},
		{"docs/out", followLinks, "!escapes the workspace through the symbolic link docs/out"},
		{"docs/abs/key", followLinks, "!escapes the workspace through the symbolic link docs/abs"},
		{"docs/bs", followLinks, "!whose target contains a backslash"},
		{`docs\a`, followLinks, "!contains a backslash"},
		{"..", followLinks, "!escapes the workspace"},
		{"docs/../..", followLinks, "!escapes the workspace"},
		{"/etc", followLinks, "!is absolute"},
		{"docs/a\x00", followLinks, "!NUL byte"},
		{"docs/\xff", followLinks, "!not valid UTF-8"},
		{"docs/" + strings.Repeat("dot/", 41) + "a", followLinks, "!more than 40 symbolic links"},
		{strings.Repeat("x/", 2100), followLinks, "!longer than 4096 bytes"},
		// The write tools follow no link; a last link is the name itself.
		{"docs/a", keepFinalLink, "docs/a"},
		{"docs/k", keepFinalLink, "docs/k"},
		{"docs/s/key", keepFinalLink, "!goes through docs/s, a symbolic link to ../secrets"},
		{"docs/k/", keepFinalLink, "!goes through docs/k"},
		{"docs/dot/a", keepFinalLink, "!goes through docs/dot"},
		{"docs/sub/../a", keepFinalLink, "docs/a"},
		{"docs/new/f", keepFinalLink, "docs/new/f"},
	}
	for _, tt := range tests {
		got, err := ts.resolve(tt.p, tt.mode)
		short := tt.p
		if len(short) > 50 {
			short = short[:50] + "…"
		}
		if want, ok := strings.CutPrefix(tt.want, "!"); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("resolve(%q, %d) = %q, %v; want a refusal with %q", short, tt.mode, got, err, want)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolve(%q, %d) = %q, %v; want %q", short, tt.mode, got, err, tt.want)
		}
	}
}

// kernelOpen opens p beneath ws as the kernel resolves it for openat2
// with RESOLVE_BENEATH, links followed: the reference resolve must agree
// with.
func kernelOpen(ws, p string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dir, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(dir)
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dir, p, how)
	for try := 0; errors.Is(err, unix.EAGAIN) && try < 100; try++ {
		fd, err = unix.Openat2(dir, p, how) // a rename elsewhere raced a ".."
	}
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	return st, unix.Fstat(fd, &st)
}

// FuzzResolve checks resolve against the kernel: for any path, when the
// kernel opens it beneath the workspace (links followed, nothing above
// the workspace), resolve gives a canonical path that names the same
// file and that opens with no link followed; when the kernel refuses it
// as escaping or looping, so does resolve. resolve may refuse more
// (backslashes, bytes that are not UTF-8), never less. And in the write
// mode, a resolved path has no link before its last element.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"docs/s/key", "docs/deep/../key", "docs/up/docs/up/secrets", "docs/c1/key", "pub/key",
		"docs/out", "docs/abs/key", "docs/loop/x", "docs/dang", "docs/miss", "docs/a/", "docs/sub/", "..", "./docs//a/.",
		"Secrets/key", "docs/dot/dot/k", "docs/file", "docs/bs", "", "/", "docs/new/../a", "docs/s/../docs/a"} {
		f.Add(s)
	}
	f.Add("docs/dot/k") // openat2 may answer EAGAIN when a rename elsewhere races a ".."
	ws, ts := resolveTree(f)
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ts.resolve(p, followLinks)
		kst, kerr := kernelOpen(ws, p)
		if p == "" {
			kst, kerr = kernelOpen(ws, ".")
		}
		if err == nil {
			if strings.Contains(got, "\\") || !utf8.ValidString(got) || !(got == "." || fsValid(got)) {
				t.Fatalf("resolve(%q) = %q, not canonical", p, got)
			}
			var st unix.Stat_t
			fd, oerr := openNoLinks(mustDir(t, ws), got, unix.O_PATH, 0)
			if oerr == nil {
				unix.Fstat(fd, &st)
				unix.Close(fd)
			}
			switch {
			case kerr == nil && oerr != nil:
				t.Fatalf("resolve(%q) = %q, which does not open (%v), but the kernel opens the path", p, got, oerr)
			case kerr == nil && (st.Dev != kst.Dev || st.Ino != kst.Ino):
				t.Fatalf("resolve(%q) = %q, another file than the kernel opens", p, got)
			case kerr != nil && oerr == nil:
				t.Fatalf("resolve(%q) = %q, which opens, but the kernel refuses the path: %v", p, got, kerr)
			}
		} else if kerr == nil && checkName(p) == "" && !strings.Contains(p, "\\") {
			// resolve refused a path the kernel opens: allowed only for
			// what resolve refuses on purpose (a link target that is not
			// a plain name).
			if !strings.Contains(err.Error(), "whose target") && !strings.Contains(err.Error(), "which does not exist") {
				t.Fatalf("resolve(%q) refused (%v) a path the kernel opens", p, err)
			}
		}
		if errors.Is(kerr, unix.EXDEV) && err == nil {
			t.Fatalf("resolve(%q) = %q, but the path escapes the workspace", p, got)
		}
		if w, err := ts.resolve(p, keepFinalLink); err == nil && w != "." {
			dir := path.Dir(w)
			if dir != "." {
				if fd, err := openNoLinks(mustDir(t, ws), dir, unix.O_PATH, 0); err == nil {
					unix.Close(fd)
				} else if !errors.Is(err, unix.ENOENT) {
					t.Fatalf("resolve(%q, keepFinalLink) = %q, whose directory has a link: %v", p, w, err)
				}
			}
		}
	})
}

// fsValid reports whether p is a clean relative path with no "." or ".."
// elements.
func fsValid(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

func mustDir(t *testing.T, ws string) int {
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// BenchmarkResolve resolves a path of three elements, one a symbolic
// link, as the file tools do before every call is decided.
func BenchmarkResolve(b *testing.B) {
	_, ts := resolveTree(b)
	b.ReportAllocs()
	for b.Loop() {
		if r, err := ts.resolve("docs/s/key", followLinks); err != nil || r != "secrets/key" {
			b.Fatal(r, err)
		}
	}
}
