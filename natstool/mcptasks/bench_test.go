package mcptasks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
)

var quiet = slog.New(slog.DiscardHandler)

// liveTasks is how many live tasks each store holds while its polls are
// measured.
const liveTasks = 256

// BenchmarkTaskStores measures, in one run and interleaved, a quick tool
// called as a task until completed through the in-memory store and
// through the durable store (an embedded nats-server, JetStream on file
// storage with every write synced, a worker in this process), and the
// cost of one tasks/get with liveTasks live tasks in each store: the
// server's polling cost per task per second is twice that at the
// suggested 500 ms interval.
func BenchmarkTaskStores(b *testing.B) {
	ns := startNATS(b)
	nc := connect(b, ns)
	ctx := context.Background()
	lim := mcptool.TaskLimits{MaxTasks: 1 << 20, MaxTotal: 1 << 20, PollsPerSecond: 1e12, PollBurst: 1 << 30}
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Limits: lim, Jobs: natstool.JobsOptions{Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	gate := make(chan struct{})
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("echo_task", "Echoes, as a task.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}, tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("held", "Waits for the gate.", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return "released", nil
	}, tool.WithTask(tool.TaskOptional), tool.WithTimeout(-1))))
	w, err := store.Jobs().Work(r, "bench", 8)
	if err != nil {
		b.Fatal(err)
	}
	// The live durable tasks are kept apart, in a store no worker takes
	// from: they stay queued (working), and the workers stay free for the
	// completions.
	liveStore, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Limits: lim,
		Jobs: natstool.JobsOptions{Stream: "BENCH_LIVE", Bucket: "bench_live", Subject: "bench.live", Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	mem := mcptool.NewServer(r, mcptool.WithTasks(lim))
	dur := mcptool.NewServer(r, mcptool.WithTasks(lim), mcptool.WithTaskStore(store))
	durLiveSrv := mcptool.NewServer(r, mcptool.WithTasks(lim), mcptool.WithTaskStore(liveStore))
	defer func() {
		close(gate)
		mem.Close()
		dur.Close()
		durLiveSrv.Close()
		w.Stop()
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	serve := func(srv *mcptool.Server, method, name, params string) []byte {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+`,`+meta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: status %d: %s", method, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	start := func(srv *mcptool.Server, name string) string {
		var out struct{ Result mcptool.CreateTaskResult }
		json.Unmarshal(serve(srv, "tools/call", name, `"name":"`+name+`","arguments":{}`), &out)
		if out.Result.TaskID == "" {
			b.Fatalf("no task from %s", name)
		}
		return out.Result.TaskID
	}
	get := func(srv *mcptool.Server, id string) mcptool.DetailedTask {
		var got struct{ Result mcptool.DetailedTask }
		json.Unmarshal(serve(srv, "tasks/get", id, `"taskId":"`+id+`"`), &got)
		return got.Result
	}
	var memPolls, durPolls int
	complete := func(srv *mcptool.Server, polls *int, pause func()) {
		id := start(srv, "echo_task")
		for {
			pause()
			*polls++
			d := get(srv, id)
			if d.Status.Terminal() {
				if d.Status != mcptool.StatusCompleted {
					b.Fatalf("task %s: %+v", d.Status, d)
				}
				return
			}
		}
	}
	var memLive, durLive []string
	for range liveTasks {
		memLive = append(memLive, start(mem, "held"))
		durLive = append(durLive, start(durLiveSrv, "held"))
	}
	b.ResetTimer()
	const chunk = 16
	var memTask, durTask, memGet, durGet time.Duration
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		for range n {
			complete(mem, &memPolls, runtime.Gosched)
		}
		t1 := time.Now()
		for range n {
			complete(dur, &durPolls, func() { time.Sleep(200 * time.Microsecond) })
		}
		t2 := time.Now()
		for i := range n {
			if d := get(mem, memLive[(done+i)%liveTasks]); d.Status != mcptool.StatusWorking {
				b.Fatalf("a live task is %s", d.Status)
			}
		}
		t3 := time.Now()
		for i := range n {
			if d := get(durLiveSrv, durLive[(done+i)%liveTasks]); d.Status != mcptool.StatusWorking {
				b.Fatalf("a live task is %s", d.Status)
			}
		}
		t4 := time.Now()
		memTask += t1.Sub(t0)
		durTask += t2.Sub(t1)
		memGet += t3.Sub(t2)
		durGet += t4.Sub(t3)
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(memTask), "mem-ns/task")
	b.ReportMetric(per(durTask), "durable-ns/task")
	b.ReportMetric(float64(durTask)/float64(memTask), "durable/mem")
	b.ReportMetric(per(memGet), "mem-get-ns")
	b.ReportMetric(per(durGet), "durable-get-ns")
	b.ReportMetric(float64(durGet)/float64(memGet), "get-durable/mem")
	b.ReportMetric(float64(durPolls)/float64(b.N), "durable-polls/task")
}
