package mcptasks

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/mcptool"
)

// runLog records the texts the "echo" tool ran with.
type runLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *runLog) ran(text string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if r == text {
			return true
		}
	}
	return false
}

// createFixture is a Store on an embedded JetStream with one worker of
// one slot serving "echo", which logs each text it runs with.
func createFixture(t *testing.T) (*Store, *runLog) {
	t.Helper()
	ns := natstest.Start(t, true)
	nc := natstest.Connect(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var log runLog
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("echo", "Logs its text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		log.mu.Lock()
		log.runs = append(log.runs, in.Text)
		log.mu.Unlock()
		return in.Text, nil
	}, tool.WithTask(tool.TaskOptional))))
	w, err := s.Jobs().Work(r, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return s, &log
}

func echoCall(text string) mcptool.TaskCall {
	args, _ := json.Marshal(map[string]string{"text": text})
	return mcptool.TaskCall{Owner: "alice", Tool: "echo", Args: args}
}

// settle creates a last task and waits until it is done: the worker
// (one slot, jobs delivered oldest first) has then dealt with every job
// queued before it.
func settle(t *testing.T, s *Store) {
	t.Helper()
	rec, err := s.Create(context.Background(), echoCall("sentinel"))
	if err != nil {
		t.Fatal(err)
	}
	for range 1500 {
		got, err := s.Get(context.Background(), "alice", rec.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Terminal() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the sentinel task never ended")
}

// TestCreateCancelledAfterSubmit is an attack on Create: the request's
// context is cancelled after the job was submitted. Create read the
// job's record back with that context, returned the cancellation as its
// error, so the client knew no task, while the job was queued and ran
// its tool: a task nobody knows ran a call. A Create that fails must
// leave no job that runs; one that succeeds returns the task, which its
// owner can read. (A submission that itself fails is natstool's
// TestSubmitAckLost*.)
func TestCreateCancelledAfterSubmit(t *testing.T) {
	s, log := createFixture(t)
	ctx, cancelRequest := context.WithCancel(context.Background())
	s.afterSubmit = cancelRequest // the client goes away just then
	rec, err := s.Create(ctx, echoCall("orphan"))
	s.afterSubmit = nil
	settle(t, s)
	switch {
	case err != nil && log.ran("orphan"):
		t.Fatalf("Create failed (%v), yet its job ran the tool: a task nobody knows ran a call", err)
	case err == nil:
		got, gerr := s.Get(context.Background(), "alice", rec.TaskID)
		if gerr != nil {
			t.Fatalf("Create returned task %s, which cannot be read: %v", rec.TaskID, gerr)
		}
		if got.Status != mcptool.StatusCompleted || !log.ran("orphan") {
			t.Errorf("task %s is %s, want completed, its tool run", rec.TaskID, got.Status)
		}
	}
}
