package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// asker is a JobAsk without MCP: the tool "ask" records its question
// (n requests of reqBytes each, a state of stateBytes) in the holder the
// hook puts in its context, and answers with the answers it was run with.
type askHolder struct {
	mu       sync.Mutex
	q        *natstool.JobQuestion
	answered *natstool.JobInput
}

type askKey struct{}

// askingWorker starts a server with JetStream and, on one connection to
// it, askingJobs with a worker of four running askRegistry; it returns
// the jobs, the connection and the count of the tool's runs.
func askingWorker(t *testing.T) (*natstool.Jobs, *nats.Conn, *atomic.Int64) {
	t.Helper()
	nc := connect(t, startServer(t, true))
	jobs := askingJobs(t, nc)
	runs := new(atomic.Int64)
	w, err := jobs.Work(askRegistry(runs), "w", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return jobs, nc, runs
}

func askingJobs(t *testing.T, nc *nats.Conn) *natstool.Jobs {
	return openJobs(t, nc, natstool.JobsOptions{AckWait: time.Second,
		Owner: func(ctx context.Context) string { o, _ := ctx.Value(ownerCtx{}).(string); return o },
		Ask: func(ctx context.Context, _ nats.Header, answered *natstool.JobInput) (context.Context, func() (*natstool.JobQuestion, error)) {
			h := &askHolder{answered: answered}
			return context.WithValue(ctx, askKey{}, h), func() (*natstool.JobQuestion, error) {
				h.mu.Lock()
				defer h.mu.Unlock()
				return h.q, nil
			}
		}})
}

type ownerCtx struct{}

func asOwner(o string) context.Context { return context.WithValue(context.Background(), ownerCtx{}, o) }

func askRegistry(runs *atomic.Int64) *tool.Registry {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("ask", "Asks, then answers with the answers.", func(ctx context.Context, in struct {
		N          int `json:"n,omitempty"`
		ReqBytes   int `json:"req_bytes,omitempty"`
		StateBytes int `json:"state_bytes,omitempty"`
	}) (string, error) {
		runs.Add(1)
		h := ctx.Value(askKey{}).(*askHolder)
		if h.answered != nil {
			var out []string
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range h.answered.Answers {
					if !yield(k) {
						return
					}
				}
			}) {
				out = append(out, k+"="+string(h.answered.Answers[k]))
			}
			return "answered " + strings.Join(out, ",") + " state " + h.answered.State, nil
		}
		q := &natstool.JobQuestion{Requests: map[string]json.RawMessage{}, State: strings.Repeat("s", in.StateBytes)}
		for i := range in.N {
			q.Requests[fmt.Sprintf("q%d", i)] = json.RawMessage(`"` + strings.Repeat("x", in.ReqBytes) + `"`)
		}
		h.mu.Lock()
		h.q = q
		h.mu.Unlock()
		return "", errors.New("asked")
	})))
	return r
}

// waitState polls job id as owner until it is in state, for at most 20 s.
func waitState(t *testing.T, jobs *natstool.Jobs, owner, id string, state natstool.JobState) natstool.Job {
	t.Helper()
	var job natstool.Job
	for range 1000 {
		var err error
		if job, err = jobs.Job(asOwner(owner), id); err == nil && (job.State == state || job.State.Terminal()) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if job.State != state {
		t.Fatalf("job %s never %s: %+v %+v", id, state, job, job.Result)
	}
	return job
}

// TestJobInputBounds: a call that asks more than a job keeps (17
// questions, a 5 KiB state, 70 KiB of questions) ends the job with an
// error result saying why; the control, one small question, leaves the
// job waiting for input with its question in the record.
func TestJobInputBounds(t *testing.T) {
	jobs, _, _ := askingWorker(t)
	for _, tc := range []struct {
		name string
		args string
		want string // in the error result; "" for input_required
	}{
		{"control: one question", `{"n":1,"req_bytes":10}`, ""},
		{"17 questions", `{"n":17,"req_bytes":1}`, "1 to 16 input requests"},
		{"a 5 KiB state", `{"n":1,"req_bytes":1,"state_bytes":5000}`, "the state is 5000 bytes"},
		{"70 KiB of questions", `{"n":2,"req_bytes":35000}`, "the input requests are"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := jobs.Submit(asOwner("ann"), "ask", json.RawMessage(tc.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				job := waitState(t, jobs, "ann", id, natstool.JobInputRequired)
				if job.Input == nil || job.Input.Round != 1 || len(job.Input.Requests) != 1 || job.Result != nil {
					t.Fatalf("the record: %+v", job)
				}
				return
			}
			job := waitState(t, jobs, "ann", id, natstool.JobDone)
			if job.Result == nil || !job.Result.IsError || !strings.Contains(job.Result.Error, tc.want) || job.Input != nil {
				t.Fatalf("the record: %+v %+v", job, job.Result)
			}
		})
	}
}

// TestJobAnswer: a job waiting for input takes only its owner's answers
// to the requests it asked, each once, within the bound; nothing of a
// refused Answer is kept. Answered in full, it runs again once with the
// answers and state, however often Resume queues that run again (the
// round's message id), and a later Answer is refused.
func TestJobAnswer(t *testing.T) {
	jobs, nc, runs := askingWorker(t)
	id, err := jobs.Submit(asOwner("ann"), "ask", json.RawMessage(`{"n":2,"req_bytes":3,"state_bytes":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, jobs, "ann", id, natstool.JobInputRequired)
	huge := json.RawMessage(`"` + strings.Repeat("a", natstool.MaxJobInputBytes) + `"`)
	for _, tc := range []struct {
		name    string
		owner   string
		answers map[string]json.RawMessage
		want    error // nil: taken
		wantMsg string
	}{
		{"another owner", "bob", map[string]json.RawMessage{"q0": json.RawMessage(`1`)}, natstool.ErrJobNotFound, ""},
		{"a request not asked", "ann", map[string]json.RawMessage{"q9": json.RawMessage(`1`)}, natstool.ErrJobNotWaiting, `no input request "q9"`},
		{"asked and not asked", "ann", map[string]json.RawMessage{"q0": json.RawMessage(`1`), "q9": json.RawMessage(`1`)}, natstool.ErrJobNotWaiting, `no input request "q9"`},
		{"over the bound", "ann", map[string]json.RawMessage{"q0": huge}, nil, "more than"},
		{"not JSON", "ann", map[string]json.RawMessage{"q0": json.RawMessage(`{`)}, nil, "not JSON"},
		{"the first answer", "ann", map[string]json.RawMessage{"q0": json.RawMessage(`1`)}, nil, ""},
		{"the same again", "ann", map[string]json.RawMessage{"q0": json.RawMessage(`2`)}, natstool.ErrJobNotWaiting, "answered already"},
		{"the second answer", "ann", map[string]json.RawMessage{"q1": json.RawMessage(`"b"`)}, nil, ""},
		{"after the last answer", "ann", map[string]json.RawMessage{"q1": json.RawMessage(`3`)}, natstool.ErrJobNotWaiting, ""},
	} {
		_, err := jobs.Answer(asOwner(tc.owner), id, tc.answers)
		switch {
		case tc.want == nil && tc.wantMsg == "" && err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		case tc.want != nil && !errors.Is(err, tc.want), tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg)):
			t.Fatalf("%s: %v, want %v %q", tc.name, err, tc.want, tc.wantMsg)
		}
	}
	for range 3 {
		if _, err := jobs.Resume(asOwner("ann"), id, 1); err != nil {
			t.Fatal(err)
		}
	}
	res := waitJob(t, jobs, asOwner("ann"), id)
	if res.IsError || res.Output != `answered q0=1,q1="b" state ss` {
		t.Fatalf("the result: %+v", res)
	}
	// The asking run and one answered run, though the answered run was
	// queued four times (Answer, three Resumes): the stream kept two
	// messages in all, the submission and round 1.
	js, _ := jetstream.New(nc)
	st, err := js.Stream(context.Background(), natstool.DefaultJobStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(context.Background()); err != nil || info.State.LastSeq != 2 {
		t.Errorf("the stream's last sequence %+v (%v), want 2", info.State, err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the tool ran %d times, want 2", n)
	}
	if job, _ := jobs.Job(asOwner("ann"), id); job.Attempts != 2 || job.Input == nil || len(job.Input.Answers) != 2 {
		t.Errorf("the record: %+v", job)
	}
}

// TestJobDuplicateMessageDropped: a second copy of a job's message (as a
// run queued again after JetStream's duplicate window would be) reaching
// a worker while the job runs is acknowledged without running the call:
// the tool runs once. A redelivery after a worker died still takes the
// job over (TestJobRedeliveredWhenWorkerDies, the control).
func TestJobDuplicateMessageDropped(t *testing.T) {
	s := startServer(t, true)
	nc := connect(t, s)
	jobs := openJobs(t, nc, natstool.JobsOptions{AckWait: 2 * time.Second})
	var runs atomic.Int64
	release := make(chan struct{})
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("hold", "Holds until released.", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})))
	w, err := jobs.Work(r, "w", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ctx := context.Background()
	id, err := jobs.Submit(ctx, "hold", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, jobs, "", id, natstool.JobRunning)
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(ctx, natstool.DefaultJobSubject+".run.hold", []byte(`{"id":"`+id+`","tool":"hold"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, natstool.DefaultJobStream)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		// Both copies delivered, and only the running one unacknowledged.
		cons, err := st.Consumer(ctx, "workers")
		if err != nil {
			t.Fatal(err)
		}
		info, err := cons.Info(ctx)
		if err == nil && info.Delivered.Consumer == 2 && info.NumPending == 0 && info.NumAckPending == 1 {
			break
		}
		if i == 1000 {
			t.Fatalf("the copy was not acknowledged: %+v", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	if res := waitJob(t, jobs, ctx, id); res.Output != "released" {
		t.Fatalf("the result: %+v", res)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}
