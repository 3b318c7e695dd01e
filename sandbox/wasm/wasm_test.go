package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/tetratelabs/wazero"
	"go.uber.org/goleak"
)

const cacheChildEnv = "CLAWTOOL_WASM_CACHE_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(cacheChildEnv); dir != "" {
		os.Exit(cacheChild(dir))
	}
	goleak.VerifyTestMain(m)
}

func newRuntime(t *testing.T, opts Options) *Runtime {
	t.Helper()
	r, err := NewRuntime(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func run(t *testing.T, r *Runtime, bin []byte, ctx context.Context, c Config) *sandbox.Result {
	t.Helper()
	m, err := r.Compile(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunOutcomes(t *testing.T) {
	r := newRuntime(t, Options{})
	bg := context.Background()
	tests := []struct {
		name     string
		bin      []byte
		cfg      Config
		timeout  time.Duration
		outcome  sandbox.Outcome
		exit     int
		stdout   string
		truncate bool
	}{
		{"hello", helloModule(), Config{}, 0, sandbox.Exited, 0, "hello\n", false},
		{"exit code", exitModule(7), Config{}, 0, sandbox.Exited, 7, "", false},
		{"spin stopped at the deadline", spinModule(), Config{}, 200 * time.Millisecond, sandbox.TimedOut, -1, "", false},
		{"flood stopped at the output limit", floodModule(), Config{Output: 1000}, 0, sandbox.OutputLimit, -1, strings.Repeat("flood\n", 166) + "floo", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := bg
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(bg, tt.timeout)
				defer cancel()
			}
			res := run(t, r, tt.bin, ctx, tt.cfg)
			if res.Outcome != tt.outcome || res.ExitCode != tt.exit || string(res.Stdout) != tt.stdout || res.Truncated != tt.truncate {
				t.Errorf("got %s exit %d stdout %q truncated %v, want %s exit %d stdout %q truncated %v",
					res.Outcome, res.ExitCode, trim(res.Stdout), res.Truncated, tt.outcome, tt.exit, trim([]byte(tt.stdout)), tt.truncate)
			}
			if len(res.Layers) != 1 || res.Layers[0] != Layer {
				t.Errorf("layers %v", res.Layers)
			}
		})
	}
}

func trim(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

func TestMemoryPageLimit(t *testing.T) {
	// Positive control: with the default limit the module grows by 100 pages.
	if res := run(t, newRuntime(t, Options{}), growModule(100), context.Background(), Config{}); res.ExitCode != 0 {
		t.Fatalf("control: growing 100 pages failed under the default limit: exit %d", res.ExitCode)
	}
	if res := run(t, newRuntime(t, Options{MemoryPages: 16}), growModule(100), context.Background(), Config{}); res.ExitCode != 9 {
		t.Errorf("growing past a 16-page limit: exit %d, want 9 (memory.grow failed)", res.ExitCode)
	}
}

func TestEnvironmentRefusesSecrets(t *testing.T) {
	m, err := newRuntime(t, Options{}).Compile(context.Background(), helloModule())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(context.Background(), Config{Env: []string{"OPENAI_API_KEY=x"}}); err == nil {
		t.Error("a secret-looking variable was passed to the module")
	}
}

// TestFilesThroughRoot plants links in the workspace that lead out. wazero's
// own directory mount follows them (the positive control); the os.Root-backed
// file system of Run does not.
func TestFilesThroughRoot(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(base, "secret.txt"), []byte("TOP SECRET"), 0o644)
	os.Symlink("../secret.txt", filepath.Join(ws, "rel-link"))
	os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(ws, "abs-link"))
	os.Symlink("a.txt", filepath.Join(ws, "inner-link"))
	r := newRuntime(t, Options{})

	// Positive control: the relative link escapes a DirMount.
	ctx := context.Background()
	cm, err := r.rt.CompileModule(ctx, readModule("rel-link"))
	if err != nil {
		t.Fatal(err)
	}
	var ctl bytes.Buffer
	mod, _ := r.rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStdout(&ctl).
		WithFSConfig(wazero.NewFSConfig().WithDirMount(ws, "/")))
	if mod != nil {
		mod.Close(ctx)
	}
	if ctl.String() != "TOP SECRET" {
		t.Fatalf("control: the link did not escape wazero's DirMount (got %q); the test would prove nothing", ctl.String())
	}

	tests := []struct {
		path string
		want string // stdout; empty means the open must fail
	}{
		{"a.txt", "inside"},
		{"inner-link", "inside"},
		{"rel-link", ""},
		{"abs-link", ""},
		{"../secret.txt", ""},
		{"../../../../etc/passwd", ""},
	}
	for _, tt := range tests {
		res := run(t, r, readModule(tt.path), ctx, Config{Workspace: ws})
		if strings.Contains(string(res.Stdout), "SECRET") || strings.Contains(string(res.Stdout), "root:") {
			t.Errorf("%s: read outside the workspace: %q", tt.path, res.Stdout)
		}
		if tt.want != "" && (string(res.Stdout) != tt.want || res.ExitCode != 0) {
			t.Errorf("%s: stdout %q exit %d, want %q", tt.path, res.Stdout, res.ExitCode, tt.want)
		}
		if tt.want == "" && res.ExitCode < 100 {
			t.Errorf("%s: exit %d, want the open to fail (exit 100+errno)", tt.path, res.ExitCode)
		}
	}
	// No file system at all without a workspace.
	if res := run(t, r, readModule("a.txt"), ctx, Config{}); res.ExitCode < 100 {
		t.Errorf("without a workspace the module opened a file: exit %d", res.ExitCode)
	}
}

// TestDiskCacheAcrossProcesses compiles a module with a cache directory, then
// has a second process compile and run it with the same directory: the
// cache must already hold it, so the second process writes nothing new.
func TestDiskCacheAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRuntime(context.Background(), Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Compile(context.Background(), helloModule()); err != nil {
		t.Fatal(err)
	}
	r.Close(context.Background())
	before := listing(t, dir)
	if !strings.Contains(before, "\n") {
		t.Fatalf("the cache directory is empty after compiling: %q", before)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), cacheChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("second process: %v %q", err, out)
	}
	if after := listing(t, dir); after != before {
		t.Errorf("the second process compiled again:\nbefore %s\nafter %s", before, after)
	}
}

func cacheChild(dir string) int {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Options{CacheDir: dir})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer r.Close(ctx)
	m, err := r.Compile(ctx, helloModule())
	if err != nil {
		fmt.Println(err)
		return 1
	}
	res, err := m.Run(ctx, Config{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	os.Stdout.Write(res.Stdout)
	return res.ExitCode
}

// listing names every file under dir with its size and modification time.
func listing(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			fmt.Fprintf(&b, "%s %d %d\n", strings.TrimPrefix(p, dir), info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}
