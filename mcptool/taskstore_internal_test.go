package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func noCancel() {}

// TestTaskStoreBadInput: every tasks/* operation on an ID that is not the
// caller's fails the same way, and update on a task that is not waiting
// is refused, while the owner's own requests succeed (the control).
func TestTaskStoreBadInput(t *testing.T) {
	s := newTaskStore(TaskLimits{})
	mine, err := s.create("alice", noCancel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		owner string
		id    string
		op    string
		want  error
	}{
		{"own get (control)", "alice", mine.id, "get", nil},
		{"unknown get", "alice", "no-such-task", "get", errTaskNotFound},
		{"foreign get", "bob", mine.id, "get", errTaskNotFound},
		{"foreign cancel", "bob", mine.id, "cancel", errTaskNotFound},
		{"foreign update", "bob", mine.id, "update", errTaskNotFound},
		{"unknown update", "alice", "x", "update", errTaskNotFound},
		{"update while working", "alice", mine.id, "update", errTaskNotWaiting},
		{"empty id", "alice", "", "get", errTaskNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			switch c.op {
			case "get":
				_, err = s.get(c.owner, c.id)
			case "cancel":
				_, err = s.cancel(c.owner, c.id)
			case "update":
				err = s.update(context.Background(), c.owner, c.id, map[string]json.RawMessage{"k": json.RawMessage(`{}`)})
			}
			if !errors.Is(err, c.want) {
				t.Errorf("%s: err %v, want %v", c.op, err, c.want)
			}
		})
	}
	if sn, _ := s.get("alice", mine.id); sn.Status != StatusWorking {
		t.Errorf("a foreign cancel changed the task: %s", sn.Status)
	}
}

// TestTaskIDsUnguessable: IDs are 128-bit random, so none repeats and
// none is derived from a counter.
func TestTaskIDsUnguessable(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newTaskID()
		if len(id) != 22 || seen[id] {
			t.Fatalf("id %q (len %d) repeated or short", id, len(id))
		}
		seen[id] = true
	}
}

// TestTaskStoreBounds: the per-principal and total bounds refuse a task
// beyond them; one principal's tasks do not use up another's.
func TestTaskStoreBounds(t *testing.T) {
	s := newTaskStore(TaskLimits{MaxTasks: 2, MaxTotal: 3})
	for i := range 2 {
		if _, err := s.create("alice", noCancel); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	if _, err := s.create("alice", noCancel); !errors.Is(err, errTooManyTasks) {
		t.Errorf("third task of alice: %v, want errTooManyTasks", err)
	}
	if _, err := s.create("bob", noCancel); err != nil {
		t.Errorf("bob's first task: %v", err)
	}
	if _, err := s.create("carol", noCancel); !errors.Is(err, errTooManyTasks) {
		t.Errorf("task beyond the total: %v, want errTooManyTasks", err)
	}
}

// TestTaskResultBounded: a result larger than MaxResultBytes fails the
// task instead of being kept; one within the bound completes it.
func TestTaskResultBounded(t *testing.T) {
	s := newTaskStore(TaskLimits{MaxResultBytes: 10})
	small, _ := s.create("a", noCancel)
	big, _ := s.create("a", noCancel)
	s.complete(small, json.RawMessage(`{"ok":1}`))
	s.complete(big, json.RawMessage(`{"content":"much too long"}`))
	if sn, _ := s.get("a", small.id); sn.Status != StatusCompleted || string(sn.result) != `{"ok":1}` {
		t.Errorf("small: %+v", sn)
	}
	if sn, _ := s.get("a", big.id); sn.Status != StatusFailed || sn.err == nil || sn.result != nil {
		t.Errorf("big: %+v", sn)
	}
}

// TestTaskTTLExpiry: a task is readable until its TTL has passed since
// creation and unknown from then on, and a live task that expires is
// cancelled.
func TestTaskTTLExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskStore(TaskLimits{TTL: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		live, _ := s.create("a", cancel)
		done, _ := s.create("a", noCancel)
		s.complete(done, json.RawMessage(`{}`))
		time.Sleep(time.Minute - time.Millisecond)
		for _, id := range []string{live.id, done.id} {
			if _, err := s.get("a", id); err != nil {
				t.Fatalf("before the TTL: %v", err)
			}
		}
		time.Sleep(time.Millisecond)
		for _, id := range []string{live.id, done.id} {
			if _, err := s.get("a", id); !errors.Is(err, errTaskNotFound) {
				t.Errorf("at the TTL: %v, want errTaskNotFound", err)
			}
		}
		if ctx.Err() == nil {
			t.Error("the expired live task was not cancelled")
		}
		if n := len(s.tasks); n != 0 {
			t.Errorf("%d tasks kept after expiry", n)
		}
	})
}

// TestTaskPollRateLimit: a principal's polls beyond the burst are refused
// until the bucket refills; another principal is not affected.
func TestTaskPollRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskStore(TaskLimits{PollsPerSecond: 10, PollBurst: 3})
		for i := range 3 {
			if err := s.allowPoll("a"); err != nil {
				t.Fatalf("poll %d: %v", i, err)
			}
		}
		if err := s.allowPoll("a"); !errors.Is(err, errPollLimit) {
			t.Errorf("poll beyond the burst: %v", err)
		}
		if err := s.allowPoll("b"); err != nil {
			t.Errorf("another principal: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := s.allowPoll("a"); err != nil {
			t.Errorf("after a refill: %v", err)
		}
	})
}

// TestTaskInputPartial: a task waiting for two inputs stays
// input_required after one is answered, shows only the other, ignores
// answers to IDs it did not ask for, and resumes with both answers.
func TestTaskInputPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskStore(TaskLimits{})
		tk, _ := s.create("a", noCancel)
		got := make(chan map[string]json.RawMessage, 1)
		go func() {
			ans, err := s.ask(context.Background(), tk, map[string]json.RawMessage{"x": json.RawMessage(`{"method":"elicitation/create"}`), "y": json.RawMessage(`{"method":"elicitation/create"}`)})
			if err != nil {
				t.Error(err)
			}
			got <- ans.answers
		}()
		synctest.Wait()
		sn, _ := s.get("a", tk.id)
		if sn.Status != StatusInputRequired || len(sn.inputs) != 2 {
			t.Fatalf("waiting: %+v", sn)
		}
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"x": json.RawMessage(`1`), "stranger": json.RawMessage(`2`)}); err != nil {
			t.Fatal(err)
		}
		sn, _ = s.get("a", tk.id)
		if _, ok := sn.inputs["y"]; sn.Status != StatusInputRequired || len(sn.inputs) != 1 || !ok {
			t.Fatalf("after a partial answer: %+v", sn)
		}
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"y": json.RawMessage(`3`)}); err != nil {
			t.Fatal(err)
		}
		ans := <-got
		if len(ans) != 2 || string(ans["x"]) != "1" || string(ans["y"]) != "3" {
			t.Errorf("answers %v", ans)
		}
		if sn, _ := s.get("a", tk.id); sn.Status != StatusWorking {
			t.Errorf("after the answers: %s", sn.Status)
		}
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"y": json.RawMessage(`3`)}); !errors.Is(err, errTaskNotWaiting) {
			t.Errorf("a second answer: %v, want errTaskNotWaiting", err)
		}
	})
}

// TestTaskCancelIdempotent: cancel ends a live task and leaves a
// terminal one as it was.
func TestTaskCancelIdempotent(t *testing.T) {
	s := newTaskStore(TaskLimits{})
	ctx, cancel := context.WithCancel(context.Background())
	live, _ := s.create("a", cancel)
	if sn, err := s.cancel("a", live.id); err != nil || sn.Status != StatusCancelled || ctx.Err() == nil {
		t.Errorf("cancel live: %+v %v (ctx %v)", sn, err, ctx.Err())
	}
	s.complete(live, json.RawMessage(`{}`)) // the run ends after the cancel
	done, _ := s.create("a", noCancel)
	s.complete(done, json.RawMessage(`{}`))
	for _, id := range []string{live.id, done.id} {
		before, _ := s.get("a", id)
		after, err := s.cancel("a", id)
		if err != nil || after.Status != before.Status {
			t.Errorf("cancel terminal %s: %v, %s → %s", id, err, before.Status, after.Status)
		}
	}
}

// TestTaskStoreClose: closing cancels the live tasks, keeps the finished
// ones readable and refuses new ones.
func TestTaskStoreClose(t *testing.T) {
	s := newTaskStore(TaskLimits{})
	ctx, cancel := context.WithCancel(context.Background())
	live, _ := s.create("a", cancel)
	done, _ := s.create("a", noCancel)
	s.complete(done, json.RawMessage(`{}`))
	s.close()
	if sn, _ := s.get("a", live.id); sn.Status != StatusCancelled || ctx.Err() == nil {
		t.Errorf("live task after close: %s (ctx %v)", sn.Status, ctx.Err())
	}
	if sn, _ := s.get("a", done.id); sn.Status != StatusCompleted {
		t.Errorf("finished task after close: %s", sn.Status)
	}
	if _, err := s.create("a", noCancel); !errors.Is(err, errTooManyTasks) {
		t.Errorf("create after close: %v", err)
	}
}

// TestTaskExpiresUnwatched is an attack on the TTL: a live task was
// cancelled when it expired only if a request then looked it up (or a
// new task swept the store), so a task no one polled went on past its
// TTL (a tool still at work, a question still waiting) for as long as
// the server ran. Its run's context must end at the TTL by itself. The
// control is a task polled at the TTL, which always ended.
func TestTaskExpiresUnwatched(t *testing.T) {
	for _, polled := range []bool{true, false} {
		name := map[bool]string{true: "polled at the TTL (control)", false: "never polled"}[polled]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newTaskStore(TaskLimits{TTL: time.Minute})
				defer st.close()
				ended := make(chan time.Duration, 1)
				start := time.Now()
				rec, err := memTasks{st}.Create(context.Background(), TaskCall{Owner: "a", Tool: "t",
					run: func(ctx context.Context, tk *task) {
						<-ctx.Done()
						ended <- time.Since(start)
					}})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				if polled {
					st.get("a", rec.TaskID)
				}
				synctest.Wait()
				select {
				case after := <-ended:
					if after != time.Minute {
						t.Errorf("the task's run ended %v after it was made, want at its TTL (%v)", after, time.Minute)
					}
				default:
					t.Error("the task's run goes on past its TTL")
				}
			})
		})
	}
}

// TestTaskAnswersBounded is an attack on the memory a task's answers
// hold: a task waiting for several input requests keeps the answers
// given so far until the last comes, and each tasks/update could bring
// an answer as large as a request body may be, so one principal's
// tasks could hold gigabytes (16 requests a task, 64 tasks). The answers
// a task keeps are bounded by MaxAnswerBytes together; an update past it
// is refused and keeps nothing. The control is answers within the bound,
// kept and resumed with.
func TestTaskAnswersBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTaskStore(TaskLimits{MaxAnswerBytes: 1000})
		tk, _ := s.create("a", noCancel)
		got := make(chan map[string]json.RawMessage, 1)
		go func() {
			ans, err := s.ask(context.Background(), tk, map[string]json.RawMessage{
				"x": json.RawMessage(`{"method":"elicitation/create"}`), "y": json.RawMessage(`{"method":"elicitation/create"}`), "z": json.RawMessage(`{"method":"elicitation/create"}`)})
			if err != nil {
				t.Error(err)
			}
			got <- ans.answers
		}()
		synctest.Wait()
		answer := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("a", n-2) + `"`) }
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"x": answer(600)}); err != nil {
			t.Fatalf("an answer within the bound (control): %v", err)
		}
		err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"y": answer(500)})
		if !errors.Is(err, errAnswersTooLarge) {
			t.Fatalf("answers of 1100 bytes with a bound of 1000: %v, want errAnswersTooLarge", err)
		}
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"x": answer(5000)}); !errors.Is(err, errAnswersTooLarge) {
			t.Fatalf("an answer of 5000 bytes replacing one: %v, want errAnswersTooLarge", err)
		}
		if sn, _ := s.get("a", tk.id); sn.Status != StatusInputRequired || len(sn.inputs) != 2 {
			t.Fatalf("after the refused answers: %s with %d pending, want y and z pending", sn.Status, len(sn.inputs))
		}
		if err := s.update(context.Background(), "a", tk.id, map[string]json.RawMessage{"y": answer(200), "z": answer(200)}); err != nil {
			t.Fatalf("the last answers within the bound (control): %v", err)
		}
		if ans := <-got; len(ans) != 3 || len(ans["x"]) != 600 {
			t.Errorf("resumed with %d answers, x of %d bytes", len(ans), len(ans["x"]))
		}
	})
}

// TestTaskShareLeavesRoomForOthers: with the bounds alone (64 tasks of
// one principal, 1,024 of all), 16 principals filled the store, and every
// other principal's task was refused until theirs expired. Now the last
// quarter is kept for principals that hold fewer than 4: one principal
// alone still gets its 64, and a newcomer still gets 4 behind 16 or 64
// principals that took all they could, one after the other. The control:
// without the share, the 17th principal gets none.
func TestTaskShareLeavesRoomForOthers(t *testing.T) {
	fill := func(s *taskStore, principals int) (newcomer int) {
		for p := range principals {
			for {
				if _, err := s.create(fmt.Sprintf("mallory%d", p), noCancel); err != nil {
					break
				}
			}
		}
		for newcomer < 64 {
			if _, err := s.create("ann", noCancel); err != nil {
				if !errors.Is(err, errTooManyTasks) {
					t.Fatal(err)
				}
				break
			}
			newcomer++
		}
		return newcomer
	}
	control := newTaskStore(TaskLimits{})
	control.noShare = true
	if n := fill(control, 16); n != 0 {
		t.Fatalf("control: Ann got %d tasks behind 16 principals without the share; the attack did not work", n)
	}
	for _, principals := range []int{16, 64} {
		if n := fill(newTaskStore(TaskLimits{}), principals); n < 4 {
			t.Errorf("Ann got %d tasks behind %d principals, want at least 4", n, principals)
		}
	}
	if n := fill(newTaskStore(TaskLimits{}), 0); n != 64 {
		t.Errorf("Ann alone got %d tasks, want MaxTasks (64)", n)
	}
}
