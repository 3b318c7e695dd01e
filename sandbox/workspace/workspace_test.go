package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sandbox's spawning thread lives as long as the forker it
	// started, which the default backend keeps for the program's life.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/miniopenclaw/tool/sandbox.spawnLoop"))
}

// env is a workspace beside a sibling directory with a similar name and a
// secret outside both, with links planted in the workspace.
type env struct {
	ws, evil, secret string
	ts               *Toolset
}

func newEnv(t testing.TB, p sandbox.Policy) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{ws: filepath.Join(base, "ws"), evil: filepath.Join(base, "ws-evil"), secret: filepath.Join(base, "secret.txt")}
	for _, d := range []string{e.ws, e.evil, filepath.Join(e.ws, "sub"), filepath.Join(e.ws, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		e.secret:                           "TOP SECRET",
		filepath.Join(e.evil, "x"):         "EVIL SIBLING",
		filepath.Join(e.ws, "a.txt"):       "hello\nworld\n",
		filepath.Join(e.ws, "sub", "b.go"): "package b\n// hello there\n",
		filepath.Join(e.ws, ".bashrc"):     "original\n",
		filepath.Join(e.ws, ".git/config"): "[core]\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"etc-link":   "/etc",
		"rel-link":   "../secret.txt",
		"abs-link":   e.secret,
		"inner-link": "a.txt",
		"out-dir":    base,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(e.ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	p.Workspace = e.ws
	ts, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	e.ts = ts
	return e
}

func (e *env) call(t testing.TB, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range e.ts.Tools() {
		if tl.Name() == name {
			r, err := tl.Execute(context.Background(), raw)
			if err != nil && !r.IsError {
				r = tool.Result{IsError: true, Error: err.Error()}
			}
			return r
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

func TestReadFilePaths(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	tests := []struct {
		path, want, wantErr string
	}{
		{"a.txt", "hello\nworld\n", ""},
		{"sub/../a.txt", "hello\nworld\n", ""},
		{"inner-link", "hello\nworld\n", ""},
		{"../secret.txt", "", "escapes the workspace"},
		{"sub/../../secret.txt", "", "escapes the workspace"},
		{"/etc/passwd", "", "is absolute"},
		{"../ws-evil/x", "", "escapes the workspace"},
		{"etc-link/passwd", "", "escapes"},
		{"rel-link", "", "escapes"},
		{"abs-link", "", "escapes"},
		{"out-dir/secret.txt", "", "escapes"},
		{"a.txt\x00.png", "", "NUL"},
		{".", "", "not a regular file"},
		{"sub", "", "not a regular file"},
		{"missing.txt", "", "no such file"},
		{strings.Repeat("a/", 3000) + "x", "", ""},
	}
	for _, tt := range tests {
		r := e.call(t, "read_file", ReadArgs{Path: tt.path})
		short := tt.path
		if len(short) > 40 {
			short = short[:40] + "..."
		}
		switch {
		case tt.want != "":
			if r.IsError || r.Output != tt.want {
				t.Errorf("read_file(%q) = %+v, want %q", short, r, tt.want)
			}
		default:
			if !r.IsError || !strings.Contains(r.Error, tt.wantErr) {
				t.Errorf("read_file(%q) = %+v, want an error containing %q", short, r, tt.wantErr)
			}
			if strings.Contains(r.Output+r.Error, "SECRET") {
				t.Errorf("read_file(%q) leaked the secret", short)
			}
		}
	}
}

func TestReadFileRefusesSpecialAndBinary(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	if err := syscall.Mkfifo(filepath.Join(e.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.call(t, "read_file", ReadArgs{Path: "fifo"}); !r.IsError || !strings.Contains(r.Error, "named pipe") {
		t.Errorf("read_file(fifo) = %+v, want a refusal that does not block", r)
	}
	os.WriteFile(filepath.Join(e.ws, "bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o644)
	if r := e.call(t, "read_file", ReadArgs{Path: "bin"}); !r.IsError || !strings.Contains(r.Error, "not a text file") {
		t.Errorf("read_file(bin) = %+v", r)
	}
	os.WriteFile(filepath.Join(e.ws, "big"), []byte(strings.Repeat("x", MaxReadBytes+10)), 0o644)
	r := e.call(t, "read_file", ReadArgs{Path: "big"})
	if r.IsError || len(r.Output) > MaxReadBytes+100 || !strings.Contains(r.Output, "[file cut at") {
		t.Errorf("read_file(big) = %d bytes, error %q", len(r.Output), r.Error)
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	tests := []struct {
		path, wantErr string
	}{
		{"new.txt", ""},
		{"deep/er/new.txt", ""},
		{"a.txt", ""},
		{"../escape.txt", "escapes the workspace"},
		{"/tmp/abs.txt", "is absolute"},
		{"../ws-evil/x", "escapes the workspace"},
		{"out-dir/planted.txt", "symbolic link"},
		{"etc-link/x", "symbolic link"},
		{".git/hooks/pre-commit", "protected"},
		{".git/config", "protected"},
		{".bashrc", "protected"},
		{".vscode/settings.json", "protected"},
		{"sub/../.bashrc", "protected"},
		{".", "workspace itself"},
		{"sub", "not a regular file"},
	}
	for _, tt := range tests {
		r := e.call(t, "write_file", WriteArgs{Path: tt.path, Content: "written"})
		if tt.wantErr == "" {
			b, err := os.ReadFile(filepath.Join(e.ws, tt.path))
			if r.IsError || err != nil || string(b) != "written" {
				t.Errorf("write_file(%q) = %+v; file %q, %v", tt.path, r, b, err)
			}
			continue
		}
		if !r.IsError || !strings.Contains(r.Error, tt.wantErr) {
			t.Errorf("write_file(%q) = %+v, want an error containing %q", tt.path, r, tt.wantErr)
		}
	}
	// Host-side: nothing outside the workspace changed or appeared.
	base := filepath.Dir(e.ws)
	for _, p := range []string{filepath.Join(base, "escape.txt"), filepath.Join(base, "planted.txt"), "/tmp/abs.txt"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created outside the workspace", p)
		}
	}
	for p, want := range map[string]string{e.secret: "TOP SECRET", filepath.Join(e.ws, ".bashrc"): "original\n", filepath.Join(e.evil, "x"): "EVIL SIBLING"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s changed to %q", p, b)
		}
	}
}

func TestWriteReplacesLinkInsteadOfFollowing(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	r := e.call(t, "write_file", WriteArgs{Path: "abs-link", Content: "replaced"})
	if r.IsError {
		t.Fatalf("write_file(abs-link) = %+v", r)
	}
	if b, _ := os.ReadFile(e.secret); string(b) != "TOP SECRET" {
		t.Errorf("the link's target changed: %q", b)
	}
	if st, err := os.Lstat(filepath.Join(e.ws, "abs-link")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("abs-link is not a regular file now: %v %v", st, err)
	}
}

func TestEditFile(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	os.WriteFile(filepath.Join(e.ws, "e.txt"), []byte("one two two three"), 0o600)
	tests := []struct {
		old, new, wantErr, want string
	}{
		{"missing", "x", "does not occur", ""},
		{"two", "2", "occurs 2 times", ""},
		{"one", "1", "", "1 two two three"},
		{"two three", "2 3", "", "1 two 2 3"},
	}
	for _, tt := range tests {
		r := e.call(t, "edit_file", EditArgs{Path: "e.txt", Old: tt.old, New: tt.new})
		b, _ := os.ReadFile(filepath.Join(e.ws, "e.txt"))
		if tt.wantErr != "" {
			if !r.IsError || !strings.Contains(r.Error, tt.wantErr) {
				t.Errorf("edit %q: %+v, want error %q", tt.old, r, tt.wantErr)
			}
			continue
		}
		if r.IsError || string(b) != tt.want {
			t.Errorf("edit %q: %+v, file %q, want %q", tt.old, r, b, tt.want)
		}
	}
	if st, _ := os.Stat(filepath.Join(e.ws, "e.txt")); st.Mode().Perm() != 0o600 {
		t.Errorf("edit changed the mode to %v", st.Mode())
	}
	for _, p := range []string{"abs-link", ".git/config", "../secret.txt"} {
		if r := e.call(t, "edit_file", EditArgs{Path: p, Old: "SECRET", New: "x"}); !r.IsError {
			t.Errorf("edit_file(%q) succeeded", p)
		}
	}
	if b, _ := os.ReadFile(e.secret); string(b) != "TOP SECRET" {
		t.Errorf("secret changed: %q", b)
	}
}

func TestListGlobGrep(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	r := e.call(t, "list_dir", ListArgs{})
	for _, want := range []string{"a.txt\n", "sub/\n", "etc-link -> /etc\n", ".git/\n"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("list_dir output %q lacks %q", r.Output, want)
		}
	}
	if r := e.call(t, "list_dir", ListArgs{Path: "out-dir"}); !r.IsError {
		t.Errorf("list_dir(out-dir) = %+v, want refusal", r)
	}
	if r := e.call(t, "glob", GlobArgs{Pattern: "sub/*.go"}); r.Output != "sub/b.go" {
		t.Errorf("glob = %+v", r)
	}
	if r := e.call(t, "glob", GlobArgs{Pattern: "../*"}); !r.IsError {
		t.Errorf("glob(../*) = %+v, want refusal", r)
	}
	if r := e.call(t, "glob", GlobArgs{Pattern: "out-dir/*"}); !r.IsError || !strings.Contains(r.Error, "escapes the workspace") || strings.Contains(r.Output, "secret") {
		t.Errorf("glob(out-dir/*) = %+v, want a refusal and nothing from outside", r)
	}
	r = e.call(t, "grep", GrepArgs{Pattern: "hel+o"})
	if !strings.Contains(r.Output, "a.txt:1:hello") || !strings.Contains(r.Output, "sub/b.go:2:// hello there") {
		t.Errorf("grep = %+v", r)
	}
	if strings.Contains(r.Output, "SECRET") {
		t.Error("grep followed a link out")
	}
	if r := e.call(t, "grep", GrepArgs{Pattern: "hello", Include: "*.go"}); strings.Contains(r.Output, "a.txt") {
		t.Errorf("grep include = %+v", r)
	}
	if r := e.call(t, "grep", GrepArgs{Pattern: "("}); !r.IsError {
		t.Errorf("grep with a bad pattern = %+v", r)
	}
}

// TestCheckUseRace swaps a.txt between a file and a link to the secret
// while read_file and write_file run: the secret is never read or written.
func TestCheckUseRace(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	target := filepath.Join(e.ws, "swap")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := target + ".tmp"
			if i%2 == 0 {
				os.WriteFile(tmp, []byte("plain"), 0o644)
			} else {
				os.Symlink(e.secret, tmp)
			}
			os.Rename(tmp, target)
			// Swap a directory for a link to outside as well.
			dtmp := filepath.Join(e.ws, "d.tmp")
			if i%2 == 0 {
				os.Mkdir(dtmp, 0o755)
			} else {
				os.Symlink(filepath.Dir(e.ws), dtmp)
			}
			os.RemoveAll(filepath.Join(e.ws, "d"))
			os.Rename(dtmp, filepath.Join(e.ws, "d"))
		}
	}()
	for range 300 {
		if r := e.call(t, "read_file", ReadArgs{Path: "swap"}); strings.Contains(r.Output+r.Error, "SECRET") {
			t.Fatal("read_file read the secret through a swapped link")
		}
		e.call(t, "write_file", WriteArgs{Path: "d/planted.txt", Content: "x"})
		e.call(t, "edit_file", EditArgs{Path: "swap", Old: "plain", New: "edited"})
	}
	close(stop)
	wg.Wait()
	if b, _ := os.ReadFile(e.secret); string(b) != "TOP SECRET" {
		t.Errorf("secret changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(e.ws), "planted.txt")); err == nil {
		t.Error("write_file wrote through a swapped directory link")
	}
}

func FuzzPaths(f *testing.F) {
	for _, s := range []string{"a.txt", "../secret.txt", "/etc/passwd", "etc-link/passwd", "rel-link", "../ws-evil/x", "sub/../a.txt", "a\x00b", "", ".", "out-dir/secret.txt", ".git/config", strings.Repeat("../", 50)} {
		f.Add(s)
	}
	e := newEnv(f, sandbox.Policy{})
	outside := filepath.Dir(e.ws)
	f.Fuzz(func(t *testing.T, p string) {
		for _, name := range []string{"read_file", "list_dir"} {
			var args any = ReadArgs{Path: p}
			if name == "list_dir" {
				args = ListArgs{Path: p}
			}
			if r := e.call(t, name, args); strings.Contains(r.Output, "SECRET") || strings.Contains(r.Output, "root:") {
				t.Fatalf("%s(%q) read outside the workspace: %q", name, p, r.Output)
			}
		}
		e.call(t, "write_file", WriteArgs{Path: p, Content: "fuzz"})
		if b, _ := os.ReadFile(e.secret); string(b) != "TOP SECRET" {
			t.Fatalf("write_file(%q) changed the secret", p)
		}
		ents, _ := os.ReadDir(outside)
		for _, en := range ents {
			if n := en.Name(); n != "ws" && n != "ws-evil" && n != "secret.txt" {
				t.Fatalf("write_file(%q) created %s outside the workspace", p, n)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(e.ws, ".bashrc")); string(b) != "original\n" {
			t.Fatalf("write_file(%q) changed a protected file", p)
		}
	})
}

func TestBoundsCutResults(t *testing.T) {
	e := newEnv(t, sandbox.Policy{})
	os.WriteFile(filepath.Join(e.ws, "many.txt"), []byte(strings.Repeat("match\n", MaxMatches+50)), 0o644)
	r := e.call(t, "grep", GrepArgs{Pattern: "match", Include: "many.txt"})
	if n := strings.Count(r.Output, "many.txt:"); n != MaxMatches || !strings.Contains(r.Output, "[cut at 200 matches]") {
		t.Errorf("grep kept %d matches (want %d) and said %q", n, MaxMatches, r.Output[max(0, len(r.Output)-40):])
	}
	dir := filepath.Join(e.ws, "big")
	os.Mkdir(dir, 0o755)
	for i := range MaxEntries + 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), nil, 0o644)
	}
	r = e.call(t, "list_dir", ListArgs{Path: "big"})
	if n := strings.Count(r.Output, "\n"); n != MaxEntries+1 || !strings.Contains(r.Output, "[listing cut at 1000 entries]") {
		t.Errorf("list_dir printed %d lines", n)
	}
	r = e.call(t, "glob", GlobArgs{Pattern: "big/*"})
	if n := strings.Count(r.Output, "big/"); n != MaxEntries || !strings.Contains(r.Output, "[cut at 1000 paths]") {
		t.Errorf("glob kept %d paths", n)
	}
	long := strings.Repeat("x", 1000)
	os.WriteFile(filepath.Join(e.ws, "long.txt"), []byte(long+"\n"), 0o644)
	if r := e.call(t, "grep", GrepArgs{Pattern: "x+", Include: "long.txt"}); len(r.Output) > 400 {
		t.Errorf("grep printed a %d-byte line", len(r.Output))
	}
}
