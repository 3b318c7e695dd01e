package plugins

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/sandbox/wasm"
)

// The test binary is re-executed as a small MCP server over stdio when
// fixtureEnv is set; it serves one echo tool per name in fixtureEnv
// (comma-separated), plus "wait", which returns only when its call is
// cancelled. With startLogEnv set, it first appends its PID to that file,
// so the tests count starts and find the processes. With exitAfterEnv
// set to N, the call after the N-th to an echo tool exits the process
// (status 4) instead of answering; with maxStartsEnv set to M, a start
// after the M-th in the start log exits at once (status 5).
//
// With manyEnv set to N, it serves N tools t0000… instead (no "wait"),
// 100 a tools/list page.
const (
	manyEnv      = "PLUGINS_FIXTURE_MANY"
	fixtureEnv   = "PLUGINS_FIXTURE_TOOLS"
	startLogEnv  = "PLUGINS_START_LOG"
	exitAfterEnv = "PLUGINS_FIXTURE_EXIT_AFTER"
	maxStartsEnv = "PLUGINS_FIXTURE_MAX_STARTS"
	// getenvEnv adds a tool "getenv" that answers the value of the
	// variable {"name"} in the fixture's environment.
	getenvEnv = "PLUGINS_FIXTURE_GETENV"
)

func TestMain(m *testing.M) {
	if names, ok := os.LookupEnv(fixtureEnv); ok {
		os.Exit(fixtureServer(names))
	}
	code := m.Run()
	if moduleDir != "" {
		os.RemoveAll(moduleDir)
	}
	os.Exit(code)
}

func fixtureServer(names string) int {
	if log := os.Getenv(startLogEnv); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return 1
		}
		fmt.Fprintln(f, os.Getpid())
		f.Close()
		if m, err := strconv.Atoi(os.Getenv(maxStartsEnv)); err == nil {
			if b, _ := os.ReadFile(log); len(strings.Fields(string(b))) > m {
				fmt.Fprintln(os.Stderr, "fixture: started too often")
				return 5
			}
		}
	}
	exitAfter, err := strconv.Atoi(os.Getenv(exitAfterEnv))
	if err != nil {
		exitAfter = -1
	}
	var calls atomic.Int64
	if os.Getenv("PLUGINS_FIXTURE_EXIT") != "" {
		fmt.Fprintln(os.Stderr, "fixture exits at once; its arguments:", strings.Join(os.Args[1:], " "))
		return 3
	}
	reg := tool.NewRegistry()
	if n, err := strconv.Atoi(os.Getenv(manyEnv)); err == nil {
		for i := range n {
			reg.Register(tool.Must(tool.New(fmt.Sprintf("t%04d", i), "One of many.", func(context.Context, struct{}) (string, error) {
				return "ok", nil
			})))
		}
		if err := mcptool.NewServer(reg, mcptool.WithPageSize(100)).ServeStdio(context.Background()); err != nil {
			return 1
		}
		return 0
	}
	for _, n := range strings.Split(names, ",") {
		if n == "" {
			continue
		}
		reg.Register(tool.Must(tool.New(n, "Echoes its text.", func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			if c := calls.Add(1); exitAfter >= 0 && c > int64(exitAfter) {
				fmt.Fprintf(os.Stderr, "fixture: exiting after %d calls\n", exitAfter)
				os.Exit(4)
			}
			return n + ":" + in.Text, nil
		})))
	}
	if os.Getenv(getenvEnv) != "" {
		reg.Register(tool.Must(tool.New("getenv", "Answers a variable of its environment.", func(_ context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "=" + os.Getenv(in.Name), nil
		})))
	}
	reg.Register(tool.Must(tool.New("wait", "Returns when cancelled.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})))
	if err := mcptool.NewServer(reg).ServeStdio(context.Background()); err != nil {
		return 1
	}
	return 0
}

// fixture is a Server entry that runs the fixture with the given tools.
func fixture(t *testing.T, log string, tools ...string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{fixtureEnv: strings.Join(tools, ",")}
	if log != "" {
		env[startLogEnv] = log
	}
	return Server{Command: exe, Args: []string{"-test.run=^$"}, Env: env}
}

// starts reads the PIDs a start log holds.
func starts(t *testing.T, log string) []int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, l := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(l)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// alive reports whether a process with that PID still exists (and is not
// a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// The example modules, each built once: testdata/toolmod (a command)
// and testdata/reactormod (a reactor).
var (
	moduleMu  sync.Mutex
	moduleDir string
	modules   = map[string]string{} // name → path of the .wasm
)

// toolModule returns the path of the example command module, building it
// with the go command on first use.
func toolModule(t testing.TB) string { return exampleModule(t, "toolmod") }

// reactorModule returns the path of the example reactor module.
func reactorModule(t testing.TB) string {
	return exampleModule(t, "reactormod", "-buildmode=c-shared")
}

func exampleModule(t testing.TB, name string, flags ...string) string {
	t.Helper()
	moduleMu.Lock()
	defer moduleMu.Unlock()
	if p, ok := modules[name]; ok {
		return p
	}
	if moduleDir == "" {
		dir, err := os.MkdirTemp("", "plugins-modules")
		if err != nil {
			t.Fatal(err)
		}
		moduleDir = dir
	}
	p := filepath.Join(moduleDir, name+".wasm")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", p, ".")...)
	cmd.Dir = filepath.Join("testdata", name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/%s: %v\n%s", name, err, out)
	}
	modules[name] = p
	return p
}

// compileCache is a directory of compiled code shared by the tests' hosts,
// holding the example modules compiled, so that each is compiled once
// (which takes long under the race detector) and not by several entries
// at once.
func compileCache(t testing.TB) string {
	t.Helper()
	mods := []string{toolModule(t), reactorModule(t)}
	moduleMu.Lock()
	defer moduleMu.Unlock()
	dir := filepath.Join(moduleDir, "cache")
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	tmp := dir + ".tmp"
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	rt, err := wasm.NewRuntime(context.Background(), wasm.Options{CacheDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	for _, m := range mods {
		bin, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Compile(context.Background(), bin); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
