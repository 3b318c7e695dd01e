package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkModuleCall calls the example command module's upper tool
// (compiled once, instantiated per call) and, as the baseline in the same
// run, a native typed tool doing the same, both through
// Registry.Execute. It reports the p50 of each and their ratio.
func BenchmarkModuleCall(b *testing.B) {
	path := toolModule(b)
	dir := b.TempDir()
	file := filepath.Join(dir, "config.json")
	os.WriteFile(file, []byte(`{"wasmModules": {"text": {"path": "`+path+`", "tools": [{"name": "upper", "description": "d",
	  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}}}`), 0o600)
	benchmarkCalls(b, file)
}

// BenchmarkReactorCall is BenchmarkModuleCall for the example reactor
// module: one warm instance, called through its exports.
func BenchmarkReactorCall(b *testing.B) {
	path := reactorModule(b)
	dir := b.TempDir()
	file := filepath.Join(dir, "config.json")
	os.WriteFile(file, []byte(`{"wasmModules": {"text": {"path": "`+path+`", "tools": [{"name": "upper", "description": "d",
	  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}}}`), 0o600)
	benchmarkCalls(b, file)
}

// benchmarkCalls loads the file, whose module serves "upper", and
// reports the p50 of calls to it and to a native tool doing the same.
func benchmarkCalls(b *testing.B, file string) {
	reg := tool.NewRegistry()
	h := NewHost(reg)
	defer h.Close()
	if err := h.Reload(b.Context(), file); err != nil {
		b.Fatal(err)
	}
	reg.Register(tool.Must(tool.New("native_upper", "d", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return strings.ToUpper(in.Text), nil
	})))
	args := json.RawMessage(`{"text":"hello"}`)
	p50 := func(name string, n int) time.Duration {
		d := make([]time.Duration, n)
		for i := range d {
			start := time.Now()
			if res := reg.Execute(b.Context(), name, args); res.Output != "HELLO" {
				b.Fatalf("%s: %+v", name, res)
			}
			d[i] = time.Since(start)
		}
		slices.Sort(d)
		return d[n/2]
	}
	var n int
	for b.Loop() {
		reg.Execute(b.Context(), "upper", args)
		n++
	}
	wasm, native := p50("upper", max(n, 5)), p50("native_upper", max(n, 5))
	b.ReportMetric(float64(wasm.Microseconds())/1000, "wasm-p50-ms")
	b.ReportMetric(float64(native.Nanoseconds())/1000, "native-p50-µs")
	b.ReportMetric(float64(wasm)/float64(native), "wasm/native")
}

// BenchmarkReload10 reloads a configuration of ten servers in which one
// entry changed per iteration, with an MCP client connected to a server
// in front of the registry. It reports the process starts per reload
// (1 when only the changed server restarts) and the time from the write
// of the file until the client, told by notifications/tools/list_changed,
// lists the changed server's new tool: the debounce (200 ms), the old
// process's stop and the new one's start.
func BenchmarkReload10(b *testing.B) {
	t := &testing.T{}
	dir := b.TempDir()
	file := filepath.Join(dir, "config.json")
	log := filepath.Join(dir, "starts")
	servers := map[string]Server{}
	for i := range 10 {
		servers[fmt.Sprintf("s%d", i)] = withPrefix(fixture(t, log, "one"), fmt.Sprintf("s%d_", i))
	}
	write := func() {
		bs, _ := json.Marshal(map[string]any{"mcpServers": servers})
		os.WriteFile(file+".tmp", bs, 0o600)
		os.Rename(file+".tmp", file)
	}
	write()
	reg := tool.NewRegistry()
	reloaded := make(chan error, 100)
	h := NewHost(reg, WithReloadFunc(func(err error) { reloaded <- err }))
	srv := mcptool.NewServer(reg)
	defer srv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	go srv.Run(ctx, st)
	changed := make(chan struct{}, 1000)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	cs.ListTools(ctx, nil) // the server notifies clients that listed
	go h.Watch(ctx, file)
	defer h.Close()
	if err := <-reloaded; err != nil {
		b.Fatal(err)
	}
	for len(reg.List()) != 20 {
		time.Sleep(time.Millisecond)
	}
	before := len(starts(t, log))
	var total time.Duration
	i := 0
	for b.Loop() {
		for len(changed) > 0 {
			<-changed
		}
		servers["s3"] = withPrefix(fixture(t, log, fmt.Sprintf("g%d", i)), "s3_")
		want := fmt.Sprintf("s3_g%d", i)
		i++
		start := time.Now()
		write()
		for seen := false; !seen; {
			<-changed
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			seen = slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == want })
		}
		total += time.Since(start)
		for len(reloaded) == 0 {
			time.Sleep(time.Millisecond)
		}
		<-reloaded
	}
	b.ReportMetric(float64(len(starts(t, log))-before)/float64(i), "starts/reload")
	b.ReportMetric(float64(total.Milliseconds())/float64(i), "write-to-new-tools-ms")
}

// helloModule is the smallest WASI command that answers: it writes
// "HELLO" to standard output, ignoring its input. It measures what a
// call costs the host, without a language runtime's start.
func helloModule() []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	types := sec(1, 2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0)
	imports := sec(2, cat([]byte{1}, str("wasi_snapshot_preview1"), str("fd_write"), []byte{0, 0})...)
	funcs := sec(3, 1, 1)
	memory := sec(5, 1, 0, 1)
	exports := sec(7, cat([]byte{2}, str("memory"), []byte{2, 0}, str("_start"), []byte{0, 1})...)
	body := []byte{0, 0x41, 1, 0x41, 0, 0x41, 1, 0x41, 8, 0x10, 0, 0x1a, 0x0b}
	code := sec(10, cat([]byte{1, byte(len(body))}, body)...)
	iovec := []byte{16, 0, 0, 0, 5, 0, 0, 0}
	data := sec(11, cat([]byte{2},
		[]byte{0, 0x41, 0, 0x0b, byte(len(iovec))}, iovec,
		[]byte{0, 0x41, 16, 0x0b, 5}, []byte("HELLO"))...)
	return cat([]byte("\x00asm\x01\x00\x00\x00"), types, imports, funcs, memory, exports, code, data)
}

// BenchmarkMinimalModuleCall is BenchmarkModuleCall for helloModule:
// the cost of a call to a module in the host, p50, against a native tool.
func BenchmarkMinimalModuleCall(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.wasm"), helloModule(), 0o600)
	file := filepath.Join(dir, "config.json")
	os.WriteFile(file, []byte(`{"wasmModules": {"hello": {"path": "hello.wasm", "tools": [{"name": "upper", "description": "d"}]}}}`), 0o600)
	benchmarkCalls(b, file)
}
