package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/policy"
)

// askPolicies make every call of deploy ask, let leads approve it, and
// let anyone call clock.
const askPolicies = `
@effect("ask")
@reason("deploys need a lead's approval")
permit (principal, action == Action::"call", resource == Tool::"deploy");

permit (principal, action == Action::"call", resource == Tool::"clock");

permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"deploy");
`

// deployModel is a stand-in for a Chat Completions server that keeps no
// state between requests, so that any process can talk to it: to a
// conversation that ends with the user's prompt it answers with calls
// of deploy and clock; to one that ends with tool results it answers
// "model saw: " and the results, joined by " | ".
func deployModel(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		var seen []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
			seen = append([]string{req.Messages[i].Content}, seen...)
		}
		if len(seen) == 0 {
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+
				`{"id":"call_d","type":"function","function":{"name":"deploy","arguments":"{\"version\":\"1.2.0\"}"}},`+
				`{"id":"call_c","type":"function","function":{"name":"clock","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		answer, _ := json.Marshal("model saw: " + strings.Join(seen, " | "))
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// process is what one process of a host has: its authorizer over the
// shared approval store, its registry, and counts of the tools' runs.
type process struct {
	authz   *policy.Authorizer
	reg     *tool.Registry
	deploys *atomic.Int32
}

func newProcess(t testing.TB, dir string, deploys *atomic.Int32) process {
	t.Helper()
	a, err := policy.New("deploy.cedar", []byte(askPolicies), policy.WithApprovalStore(&policy.FileApprovalStore{Dir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("deploy", "Deploys a version.", func(ctx context.Context, in struct {
		Version string `json:"version"`
	}) (string, error) {
		deploys.Add(1)
		return "deployed " + in.Version, nil
	})))
	reg.Register(tool.Must(tool.New("clock", "Tells the time.", func(context.Context, struct{}) (string, error) {
		return "12:00", nil
	})))
	return process{authz: a, reg: reg, deploys: deploys}
}

func (p process) agent(srv *httptest.Server, opts ...agent.Option) *agent.Agent {
	return agent.New(agent.OpenAI(srv.URL, "sk-not-for-the-state", "local"), p.reg, append([]agent.Option{agent.WithPause(p.authz)}, opts...)...)
}

var (
	bob = policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	ann = policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
)

// pauseOnce runs the prompt and returns the saved state of the run,
// which must pause on deploy alone.
func pauseOnce(t *testing.T, a *agent.Agent) ([]byte, string) {
	t.Helper()
	_, err := a.Run(bob, "Deploy 1.2.0 and tell me the time.")
	var paused *agent.PausedError
	if !errors.As(err, &paused) || !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("Run: %v, want a *PausedError", err)
	}
	p := paused.State.Pending()
	if len(p) != 1 || p[0].Call.Name != "deploy" || string(p[0].Call.Args) != `{"version":"1.2.0"}` {
		t.Fatalf("pending = %+v, want deploy alone", p)
	}
	saved, err := paused.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(saved, []byte("sk-not-for-the-state")) || bytes.Contains(saved, []byte("127.0.0.1")) {
		t.Errorf("the saved state carries the API key or the endpoint:\n%s", saved)
	}
	return saved, p[0].Approval
}

func restore(t *testing.T, a *agent.Agent, saved []byte) *agent.Session {
	t.Helper()
	st, err := agent.ParseRunState(saved)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Restore(st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A run pauses on a call that asks; resumed by another Agent (another
// process's) before anyone answered, it pauses again without running
// the call; once a lead approved, it runs the call once, the model sees
// its result and that of the call that ran before the pause, and a
// second resume of the same saved state is refused and runs nothing.
func TestPauseResumeApproved(t *testing.T) {
	srv := deployModel(t)
	dir := t.TempDir()
	var deploys atomic.Int32
	first := newProcess(t, dir, &deploys)
	saved, id := pauseOnce(t, first.agent(srv))
	if deploys.Load() != 0 {
		t.Fatal("deploy ran before it was approved")
	}

	second := newProcess(t, dir, &deploys)
	_, err := restore(t, second.agent(srv), saved).Resume(bob)
	var paused *agent.PausedError
	if !errors.As(err, &paused) || paused.State.Pending()[0].Approval != id {
		t.Fatalf("Resume before the answer: %v, want paused again on %s", err, id)
	}

	if _, err := first.authz.Answer(ann, id, true, "go ahead"); err != nil {
		t.Fatal(err)
	}
	answer, err := restore(t, second.agent(srv), saved).Resume(bob)
	if err != nil {
		t.Fatal(err)
	}
	if want := "model saw: deployed 1.2.0 | 12:00"; answer != want {
		t.Errorf("answer = %q, want %q", answer, want)
	}
	if n := deploys.Load(); n != 1 {
		t.Errorf("deploy ran %d times, want 1", n)
	}

	third := newProcess(t, dir, &deploys)
	_, err = restore(t, third.agent(srv), saved).Resume(bob)
	if !errors.Is(err, policy.ErrApprovalUsed) || !strings.Contains(err.Error(), id) {
		t.Errorf("second Resume: %v, want an error wrapping ErrApprovalUsed naming %s", err, id)
	}
	if n := deploys.Load(); n != 1 {
		t.Errorf("after a second resume deploy ran %d times, want 1", n)
	}
}

// A denied call's refusal, with who denied it and the note, reaches the
// model, and the run finishes.
func TestPauseResumeDenied(t *testing.T) {
	srv := deployModel(t)
	dir := t.TempDir()
	var deploys atomic.Int32
	p := newProcess(t, dir, &deploys)
	saved, id := pauseOnce(t, p.agent(srv))
	if _, err := p.authz.Answer(ann, id, false, "not on weekends"); err != nil {
		t.Fatal(err)
	}
	answer, err := restore(t, newProcess(t, dir, &deploys).agent(srv), saved).Resume(bob)
	if err != nil {
		t.Fatal(err)
	}
	if want := `denied by ann: not on weekends`; !strings.Contains(answer, want) || !strings.HasSuffix(answer, "| 12:00") {
		t.Errorf("answer = %q, want the refusal %q and the clock's result", answer, want)
	}
	if deploys.Load() != 0 {
		t.Error("a denied deploy ran")
	}
}

// The checkpoint taken after the approved call ran and before the model
// is asked again holds its result: a process that died then resumes from
// it without making the call again.
func TestCheckpointAfterTheCallsRan(t *testing.T) {
	srv := deployModel(t)
	dir := t.TempDir()
	var deploys atomic.Int32
	p := newProcess(t, dir, &deploys)
	saved, id := pauseOnce(t, p.agent(srv))
	if _, err := p.authz.Answer(ann, id, true, ""); err != nil {
		t.Fatal(err)
	}
	var checkpoints [][]byte
	failModel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusServiceUnavailable)
	}))
	defer failModel.Close()
	a := p.agent(failModel, agent.WithCheckpoint(func(_ context.Context, st *agent.RunState) error {
		b, err := st.MarshalJSON()
		checkpoints = append(checkpoints, b)
		return err
	}))
	s := restore(t, a, saved)
	if _, err := s.Resume(bob); err == nil || errors.Is(err, agent.ErrPaused) {
		t.Fatalf("Resume against a failing model: %v, want its error", err)
	}
	if len(checkpoints) != 1 || deploys.Load() != 1 {
		t.Fatalf("%d checkpoints, %d deploys; want 1 and 1", len(checkpoints), deploys.Load())
	}
	st, err := agent.ParseRunState(checkpoints[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Pending()) != 0 {
		t.Fatalf("the checkpoint still has pending calls: %+v", st.Pending())
	}
	// The session itself may be resumed again, and so may the checkpoint,
	// in another process: neither deploys again.
	if _, err := s.Resume(bob); err == nil || errors.Is(err, agent.ErrPaused) || deploys.Load() != 1 {
		t.Fatalf("second Resume of the session: %v, %d deploys", err, deploys.Load())
	}
	answer, err := restore(t, newProcess(t, dir, &deploys).agent(srv), checkpoints[0]).Resume(bob)
	if err != nil || answer != "model saw: deployed 1.2.0 | 12:00" {
		t.Errorf("resume of the checkpoint: %q, %v", answer, err)
	}
	if n := deploys.Load(); n != 1 {
		t.Errorf("deploy ran %d times, want 1", n)
	}
}

// Without an Approvals, Resume makes the waiting call again and the
// authorizer decides: still pending, the run pauses on the same request.
func TestResumeWithoutApprovals(t *testing.T) {
	srv := deployModel(t)
	dir := t.TempDir()
	var deploys atomic.Int32
	p := newProcess(t, dir, &deploys)
	saved, id := pauseOnce(t, p.agent(srv))
	a := agent.New(agent.OpenAI(srv.URL, "", "local"), p.reg, agent.WithPause(nil))
	_, err := restore(t, a, saved).Resume(bob)
	var paused *agent.PausedError
	if !errors.As(err, &paused) || paused.State.Pending()[0].Approval != id || deploys.Load() != 0 {
		t.Fatalf("Resume: %v, want paused again on %s", err, id)
	}
}

// A paused Session refuses a new prompt; a Session made by Restore
// refuses an Agent of another API.
func TestPausedSessionRules(t *testing.T) {
	srv := deployModel(t)
	var deploys atomic.Int32
	p := newProcess(t, t.TempDir(), &deploys)
	a := p.agent(srv)
	s := a.NewSession()
	if _, err := s.Send(bob, "Deploy."); !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("Send: %v", err)
	}
	if s.Paused() == nil {
		t.Fatal("Paused() = nil for a paused session")
	}
	if _, err := s.Send(bob, "Something else."); !errors.Is(err, agent.ErrPaused) {
		t.Errorf("Send on a paused session: %v, want ErrPaused", err)
	}
	other := agent.New(agent.Anthropic("", "m", agent.WithBaseURL(srv.URL)), p.reg, agent.WithPause(p.authz))
	if _, err := other.Restore(s.Paused()); err == nil || !strings.Contains(err.Error(), "API") {
		t.Errorf("Restore with another API: %v", err)
	}
	if _, err := a.NewSession().Resume(bob); err == nil {
		t.Error("Resume of a session that is not paused succeeded")
	}
}

// A process that died after the approval was used (kill -9 between the
// use and the save that follows the call) never makes the call twice:
// whether the call ran before the crash or not, resuming the state
// saved at the pause is refused and runs nothing. What is lost is the
// call (used, not run) or its result (run, not saved). Here the answer
// is used with Consume, as by a store that does not claim; with a claim
// the approval is kept for a person to answer again (see
// TestResumeAfterAnInterruptedRun).
func TestCrashAfterTheApprovalWasUsed(t *testing.T) {
	for _, ran := range []bool{false, true} {
		t.Run(fmt.Sprintf("ran=%v", ran), func(t *testing.T) {
			srv := deployModel(t)
			dir := t.TempDir()
			var deploys atomic.Int32
			p := newProcess(t, dir, &deploys)
			saved, id := pauseOnce(t, p.agent(srv))
			if _, err := p.authz.Answer(ann, id, true, ""); err != nil {
				t.Fatal(err)
			}
			// What the dead process did before it died.
			store := &policy.FileApprovalStore{Dir: dir}
			if ran {
				if res := p.reg.Execute(bob, "deploy", json.RawMessage(`{"version":"1.2.0"}`)); res.IsError || deploys.Load() != 1 {
					t.Fatalf("the approved call did not run: %+v", res)
				}
			} else {
				rec, err := store.Get(context.Background(), id, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if _, ok, err := store.Consume(context.Background(), rec.Digest, time.Now()); !ok || err != nil {
					t.Fatalf("Consume: %v, %v", ok, err)
				}
			}
			before := deploys.Load()
			_, err := restore(t, newProcess(t, dir, &deploys).agent(srv), saved).Resume(bob)
			if !errors.Is(err, policy.ErrApprovalUsed) {
				t.Errorf("Resume after the crash: %v, want ErrApprovalUsed", err)
			}
			if deploys.Load() != before {
				t.Errorf("deploy ran again after the crash")
			}
		})
	}
}

// The same round on the Messages API: the conversation restored in
// another Agent carries the tool_use block, and the result of the
// approved call reaches the model in a tool_result.
func TestPauseResumeMessages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		last := string(req.Messages[len(req.Messages)-1])
		if strings.Contains(last, `"tool_result"`) {
			seen := "nothing"
			if strings.Contains(last, "deployed 1.2.0") {
				seen = "deployed 1.2.0"
			}
			fmt.Fprintf(w, `{"content":[{"type":"text","text":"model saw: %s"}],"stop_reason":"end_turn"}`, seen)
			return
		}
		io.WriteString(w, `{"content":[{"type":"tool_use","id":"tu_1","name":"deploy","input":{"version":"1.2.0"}}],"stop_reason":"tool_use"}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var deploys atomic.Int32
	mk := func() (*agent.Agent, process) {
		p := newProcess(t, dir, &deploys)
		return agent.New(agent.Anthropic("", "m", agent.WithBaseURL(srv.URL)), p.reg, agent.WithPause(p.authz)), p
	}
	a, p := mk()
	_, err := a.Run(bob, "Deploy.")
	var paused *agent.PausedError
	if !errors.As(err, &paused) {
		t.Fatalf("Run: %v", err)
	}
	saved, err := paused.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.authz.Answer(ann, paused.State.Pending()[0].Approval, true, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := mk()
	answer, err := restore(t, b, saved).Resume(bob)
	if err != nil || answer != "model saw: deployed 1.2.0" || deploys.Load() != 1 {
		t.Errorf("Resume: %q, %v, %d deploys", answer, err, deploys.Load())
	}
}
