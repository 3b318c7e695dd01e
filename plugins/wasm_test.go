package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox/wasm"
	"go.uber.org/goleak"
)

// moduleHost loads the example module with its three tools and a
// workspace holding hello.txt. (One module entry: compiling a module
// built by Go takes seconds under the race detector.)
func moduleHost(t *testing.T) *tool.Registry {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	writeConfig(t, file, []byte(`{
	  "wasmModules": {
	    "text": {"path": "`+toolModule(t)+`", "prefix": "t_", "timeout": "2s", "workspace": "`+ws+`",
	      "tools": [
	        {"name": "upper", "description": "Upper-cases text.",
	         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}},
	        {"name": "spin", "description": "Never returns."},
	        {"name": "read", "description": "Reads a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
	      ]}
	  }
	}`))
	reg := tool.NewRegistry()
	h := NewHost(reg, WithCacheDir(compileCache(t)), WithConnectTimeout(3*time.Minute)) // ok-wallclock: a failure bound
	t.Cleanup(func() { h.Close() })
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Status() {
		if s.State != Ready {
			t.Fatalf("module %s: %+v", s.Name, s)
		}
	}
	return reg
}

func TestModuleTools(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	reg := moduleHost(t)
	host, err := os.ReadFile("/etc/hostname")
	if err != nil || len(strings.TrimSpace(string(host))) == 0 {
		host = []byte("root:x:0:0")
	}
	for _, tc := range []struct {
		name, tool, args string
		kind             tool.ErrorKind // "" for success
		want             string         // in the output or the error
	}{
		{"valid call", "t_upper", `{"text":"hello, wasm"}`, "", "HELLO, WASM"},
		{"invalid arguments", "t_upper", `{"text":5}`, tool.KindInvalidArguments, "text"},
		{"unknown argument", "t_upper", `{"text":"a","rm":true}`, tool.KindInvalidArguments, "rm"},
		{"spinning module", "t_spin", `{}`, tool.KindTimeout, "stopped at its deadline of 2s"},
		{"host file", "t_read", `{"path":"/etc/hostname"}`, tool.KindToolError, "module \"text\""},
		{"workspace file", "t_read", `{"path":"/hello.txt"}`, "", "hello from the workspace"},
		{"out of the workspace", "t_read", `{"path":"/../../../../etc/hostname"}`, tool.KindToolError, "module \"text\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Execute(t.Context(), tc.tool, json.RawMessage(tc.args))
			if res.Kind != tc.kind || res.IsError != (tc.kind != "") {
				t.Fatalf("%s(%s) = %+v, want kind %q", tc.tool, tc.args, res, tc.kind)
			}
			if got := res.Output + res.Error; !strings.Contains(got, tc.want) {
				t.Errorf("%s(%s) gave %q, want %q in it", tc.tool, tc.args, got, tc.want)
			}
			if strings.Contains(res.Output+res.Error, strings.TrimSpace(string(host))) {
				t.Errorf("the module read a host file: %q", res.Output+res.Error)
			}
		})
	}
}

// reactorTools are the example reactor's tools, as a configuration
// lists them.
const reactorTools = `[
	{"name": "upper", "description": "Upper-cases text.",
	 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}},
	{"name": "count", "description": "Calls served by this instance."},
	{"name": "spin", "description": "Never returns."},
	{"name": "read", "description": "Reads a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
	{"name": "big", "description": "A result of n bytes.", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
	{"name": "garbage", "description": "A result that is not JSON."},
	{"name": "hold", "description": "Keeps n bytes.", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
]`

// loadConfig applies the configuration text (written to a file in a
// temporary directory, so relative paths are relative to it) and returns
// the registry and the host.
func loadConfig(t *testing.T, text string) (*tool.Registry, *Host) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.json")
	writeConfig(t, file, []byte(text))
	reg := tool.NewRegistry()
	h := NewHost(reg, WithCacheDir(compileCache(t)), WithConnectTimeout(3*time.Minute)) // ok-wallclock: a failure bound
	t.Cleanup(func() { h.Close() })
	if err := h.Reload(t.Context(), file); err != nil {
		t.Fatal(err)
	}
	return reg, h
}

func call(t *testing.T, reg *tool.Registry, name, args string) tool.Result {
	t.Helper()
	return reg.Execute(t.Context(), name, json.RawMessage(args))
}

func TestReactorModule(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	reg, h := loadConfig(t, `{
	  "defaults": {"maxOutput": 4096},
	  "wasmModules": {
	    "r": {"path": "`+reactorModule(t)+`", "prefix": "r_", "timeout": "2s", "tools": `+reactorTools+`}
	  }
	}`)
	if st := h.Status(); len(st) != 1 || st[0].State != Ready || st[0].Tools != 7 {
		t.Fatalf("status: %+v", st)
	}
	want := func(res tool.Result, kind tool.ErrorKind, text string) {
		t.Helper()
		if res.Kind != kind || res.IsError != (kind != "") || !strings.Contains(res.Output+res.Error, text) {
			t.Fatalf("got %+v, want kind %q and %q in it", res, kind, text)
		}
	}
	want(call(t, reg, "r_upper", `{"text":"hello, reactor"}`), "", "HELLO, REACTOR")
	// The instance is kept: its state persists between calls.
	want(call(t, reg, "r_count", `{}`), "", "2")
	// Arguments that do not match the schema never reach the module: the
	// count goes on from 2 to 3, not 4.
	want(call(t, reg, "r_upper", `{"text":5}`), tool.KindInvalidArguments, "text")
	want(call(t, reg, "r_upper", `{"text":"a","rm":true}`), tool.KindInvalidArguments, "rm")
	want(call(t, reg, "r_count", `{}`), "", "3")
	// A host file is not there for the module.
	host, err := os.ReadFile("/etc/hostname")
	if err != nil || len(strings.TrimSpace(string(host))) == 0 {
		host = []byte("root:x:0:0")
	}
	res := call(t, reg, "r_read", `{"path":"/etc/hostname"}`)
	want(res, tool.KindToolError, `module "r", tool "read"`)
	if strings.Contains(res.Error, strings.TrimSpace(string(host))) {
		t.Fatalf("the module read a host file: %q", res.Error)
	}
	// A result past the limit is refused, not read; the instance stays.
	want(call(t, reg, "r_big", `{"n":4000}`), "", strings.Repeat("x", 4000))
	want(call(t, reg, "r_big", `{"n":5000}`), tool.KindToolError, "result of 5013 bytes is larger than the limit of 4096 bytes")
	want(call(t, reg, "r_garbage", `{}`), tool.KindToolError, `malformed result`)
	want(call(t, reg, "r_count", `{}`), "", "8")
	// A spinning call is stopped at its deadline and its instance closed:
	// the next call works, on a fresh instance.
	want(call(t, reg, "r_spin", `{}`), tool.KindTimeout, "stopped at its deadline of 2s")
	want(call(t, reg, "r_upper", `{"text":"again"}`), "", "AGAIN")
	want(call(t, reg, "r_count", `{}`), "", "2")
}

func TestModuleABIChecked(t *testing.T) {
	_, h := loadConfig(t, `{
	  "wasmModules": {
	    "asCommand": {"path": "`+reactorModule(t)+`", "abi": "command", "tools": [{"name": "upper"}]}
	  }
	}`)
	st := h.Status()
	if len(st) != 1 || st[0].State != Failed || !strings.Contains(st[0].Err, `"abi": "command", but the module does not export _start`) {
		t.Fatalf("status: %+v", st)
	}
}

// TestReactorRecycled checks that an instance whose memory grew past
// three quarters of the limit is replaced after its call, before it runs
// out: a module keeping 2 MiB more on every call never fails, and starts
// afresh (its count back to 1) within a bounded number of calls.
func TestReactorRecycled(t *testing.T) {
	reg, _ := loadConfig(t, `{
	  "wasmModules": {
	    "r": {"path": "`+reactorModule(t)+`", "memoryPages": 512, "tools": `+reactorTools+`}
	  }
	}`)
	for i := 1; ; i++ {
		res := call(t, reg, "hold", `{"n":2097152}`)
		if res.IsError {
			t.Fatalf("call %d: %+v", i, res)
		}
		if res.Output == "1" && i > 1 {
			return // a fresh instance
		}
		if i == 32 {
			t.Fatalf("after %d calls keeping 2 MiB each in 32 MiB, the instance was never recycled", i)
		}
	}
}

// TestReactorPool checks the pool of warm instances: at most its size
// exist at once, a call beyond them waits (and gives up when its context
// ends), and a released instance serves the next call.
func TestReactorPool(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	rt, err := wasm.NewRuntime(t.Context(), wasm.Options{CacheDir: compileCache(t), MemoryPages: DefaultModulePages})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	bin, err := os.ReadFile(reactorModule(t))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Compile(t.Context(), bin)
	if err != nil {
		t.Fatal(err)
	}
	r := newReactor(mod, wasm.Config{}, 2, DefaultModulePages)
	defer r.close()
	a, err := r.acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("one instance served two calls at once")
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.acquire(done); err == nil {
		t.Fatal("a third instance of a pool of two")
	}
	r.release(a, true)
	c, err := r.acquire(t.Context())
	if err != nil || c != a {
		t.Fatalf("after a release: %p, %v; want the released instance %p", c, err, a)
	}
	// Released as not to be kept, an instance is closed.
	r.release(b, false)
	if b.MemorySize() != 0 {
		t.Error("an instance released as broken is still open")
	}
	r.release(c, true)
	r.close()
	if _, err := r.acquire(t.Context()); !errors.Is(err, errReactorClosed) {
		t.Errorf("acquire after close: %v", err)
	}
	if c.MemorySize() != 0 {
		t.Error("an idle instance outlived the pool")
	}
}
