package mcptasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// askCedar asks a person about every call of "remove", lets bob answer
// (an approval is judged again when it is used), and permits the other
// tools.
const askCedar = `
@id("ask-remove")
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"remove");
@id("bob-approves")
permit (principal == User::"bob", action == Action::"approve", resource == Tool::"remove");
@id("others")
permit (principal, action == Action::"call", resource) unless { resource == Tool::"remove" };
`

// askingRegistry holds "confirm", which asks its client with
// RequestInput and answers with the client's action, and "remove", which
// the policy asks a person about (an ElicitApprover, requests kept in
// apv). Each counts its runs in dir (confirm-runs, removed), by pid.
func askingRegistry(dir string, apv policy.ApprovalStore) (*tool.Registry, error) {
	a, err := policy.New("ask.cedar", []byte(askCedar), policy.WithApprover(mcptool.ElicitApprover{}), policy.WithApprovalStore(apv))
	if err != nil {
		return nil, err
	}
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	r.Register(tool.Must(tool.New("confirm", "Asks before it goes on.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		appendLine(filepath.Join(dir, "confirm-runs"), fmt.Sprint(os.Getpid()))
		if res, ok := mcptool.InputResponses(ctx)["ok"].(*mcp.ElicitResult); ok && mcptool.RequestState(ctx) == "st:"+in.Text {
			return res.Action + " " + in.Text, nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"ok": &mcp.ElicitParams{Message: "Go on with " + in.Text + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}, "st:"+in.Text)
	}, tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("remove", "Removes a file.", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		appendLine(filepath.Join(dir, "removed"), in.Path)
		return "removed " + in.Path, nil
	}, tool.WithTask(tool.TaskOptional))))
	return r, nil
}

// principalJobs carries the request's principal to the worker, signed
// with a shared key (natstool.SignedHeaders, VerifiedJobContext): the
// resumed rounds of the tests that use it are signed again, for their
// own message, by whoever answers.
func principalJobs() natstool.JobsOptions {
	key := []byte("0123456789abcdef0123456789abcdef")
	signer, err1 := policy.NewHeaderSigner(key, nil)
	verifier, err2 := policy.NewHeaderSigner(key, &policy.HeaderSignerOptions{MaxAge: natstool.DefaultJobTTL, Repeats: true})
	if err1 != nil || err2 != nil {
		panic("principalJobs: a 32-byte key refused")
	}
	return natstool.JobsOptions{AckWait: ackWait, Headers: natstool.SignedHeaders(signer), Context: natstool.VerifiedJobContext(verifier)}
}

// elicitCaps declares the tasks extension and elicitation.
var elicitCaps = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}}

// startTask calls name with args as user, declaring caps, and returns
// the task's ID.
func startTask(t *testing.T, url, user, name string, args, caps map[string]any) string {
	t.Helper()
	res := rpcCaps(t, url, user, "tools/call", name, map[string]any{"name": name, "arguments": args}, caps)
	var ct mcptool.CreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &ct) != nil || ct.ResultType != mcptool.ResultTypeTask {
		t.Fatalf("tools/call %s: %s %+v", name, res.Result, res.Error)
	}
	return ct.TaskID
}

// pollUntil reads task id as user until it is in a state that done
// accepts, at the polling rate the server allows (a rate-limited poll is
// tried again), for at most 30 s.
func pollUntil(t *testing.T, url, user, id string, done func(mcptool.DetailedTask) bool) mcptool.DetailedTask {
	t.Helper()
	var d mcptool.DetailedTask
	for range 600 {
		res := rpc(t, url, user, "tasks/get", id, map[string]any{"taskId": id})
		switch {
		case res.Error != nil && res.Error.Code == mcptool.CodeRateLimited:
		case res.Error != nil:
			t.Fatalf("tasks/get %s: %+v", id, res.Error)
		default:
			d = mcptool.DetailedTask{}
			if err := json.Unmarshal(res.Result, &d); err != nil {
				t.Fatal(err)
			}
			if done(d) {
				return d
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s never got there; last %+v", id, d)
	return d
}

func isStatus(st mcptool.TaskStatus) func(mcptool.DetailedTask) bool {
	return func(d mcptool.DetailedTask) bool { return d.Status == st }
}

func terminal(d mcptool.DetailedTask) bool { return d.Status.Terminal() }

// update sends tasks/update as user with answers.
func update(t *testing.T, url, user, id string, answers map[string]any) rpcResponse {
	t.Helper()
	return rpc(t, url, user, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": answers})
}

// resultText is the text and isError of a completed task's result.
func resultText(t *testing.T, d mcptool.DetailedTask) (string, bool) {
	t.Helper()
	var out struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(d.Result, &out); err != nil || len(out.Content) == 0 {
		t.Fatalf("result of %+v: %s (%v)", d, d.Result, err)
	}
	return out.Content[0].Text, out.IsError
}

// TestDurableInputSurvivesServerKill: a durable task whose call asks its
// client (RequestInput) is input_required on the serving process that
// created it; that process gets SIGKILL while the task waits; a new
// serving process shows the same question, refuses the answers of
// another principal, to a request the task did not ask, and a second
// answer, and takes the owner's answer, which the new process's worker
// runs the call with. The call ran twice: asking, in the first process,
// and answered, in the second.
func TestDurableInputSurvivesServerKill(t *testing.T) {
	ns := startNATS(t)
	dir := t.TempDir()
	a, line := startChild(t, "serve", ns.ClientURL(), dir)
	urlA := strings.TrimPrefix(line, "serving ")
	id := startTask(t, urlA, "alice", "confirm", map[string]any{"text": "x"}, elicitCaps)
	d := pollUntil(t, urlA, "alice", id, isStatus(mcptool.StatusInputRequired))
	if len(d.InputRequests) != 1 || !strings.Contains(string(d.InputRequests["ok"]), `"elicitation/create"`) {
		t.Fatalf("before the kill: %+v %s", d, d.InputRequests["ok"])
	}
	pidA := fmt.Sprint(a.Process.Pid)
	kill(a, childExited[a])

	_, line = startChild(t, "serve", ns.ClientURL(), dir)
	urlB := strings.TrimPrefix(line, "serving ")
	d = pollUntil(t, urlB, "alice", id, func(mcptool.DetailedTask) bool { return true })
	if d.Status != mcptool.StatusInputRequired || len(d.InputRequests) != 1 || d.InputRequests["ok"] == nil {
		t.Fatalf("after the restart: %+v", d)
	}
	accept := map[string]any{"action": "accept", "content": map[string]any{}}
	for _, tc := range []struct {
		name, user string
		answers    map[string]any
		want       string // in the error; "" for none
	}{
		{"another principal", "mallory", map[string]any{"ok": accept}, "not found"},
		{"a request the task did not ask", "alice", map[string]any{"nope": accept}, `no input request "nope"`},
		{"one asked and one not", "alice", map[string]any{"ok": accept, "nope": accept}, `no input request "nope"`},
		{"the owner's answer", "alice", map[string]any{"ok": accept}, ""},
		{"a second answer", "alice", map[string]any{"ok": accept}, "not waiting"},
	} {
		res := update(t, urlB, tc.user, id, tc.answers)
		switch {
		case tc.want == "" && res.Error != nil:
			t.Fatalf("%s: %+v", tc.name, res.Error)
		case tc.want != "" && (res.Error == nil || res.Error.Code != -32602 || !strings.Contains(res.Error.Message, tc.want)):
			t.Fatalf("%s: %+v, want -32602 with %q", tc.name, res.Error, tc.want)
		}
	}
	d = pollUntil(t, urlB, "alice", id, terminal)
	if text, isErr := resultText(t, d); d.Status != mcptool.StatusCompleted || isErr || text != "accept x" {
		t.Fatalf("the task: %+v %s", d, d.Result)
	}
	runs := lines(filepath.Join(dir, "confirm-runs"))
	if len(runs) != 2 || runs[0] != pidA || runs[1] == pidA {
		t.Errorf("runs %v: want one in the killed process %s, then one in the new one", runs, pidA)
	}
}

// TestDurableAskApprovals: a policy's ask inside a durable task is the
// task's input_required state, and the same request is pending in the
// approvals store (what clawtool approvals list shows). Answered either
// way — tasks/update or the store — it settles once: the call runs once
// when approved, never when denied, the request is no longer pending,
// and the other way's later answer is refused. The control: a client
// that did not declare elicitation gets no question; its task completes
// with the refusal that names the pending request.
func TestDurableAskApprovals(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	ctx := context.Background()
	dir := t.TempDir()
	apv, err := natstool.OpenApprovals(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs(), Approvals: apv})
	if err != nil {
		t.Fatal(err)
	}
	r, err := askingRegistry(dir, apv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Jobs().Work(r, "in-test", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	srv := mcptool.NewServer(r, mcptool.WithTaskStore(store))
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		c := req.Context()
		if u := req.Header.Get(principalHeader); u != "" {
			c = policy.WithPrincipal(c, policy.Principal{ID: u})
		}
		srv.ServeHTTP(rw, req.WithContext(c))
	}))
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"

	approve := func(yes bool) map[string]any {
		return map[string]any{"clawtool_approval": map[string]any{"action": "accept", "content": map[string]any{"approve": yes}}}
	}
	for _, tc := range []struct {
		name    string
		byStore bool // answer in the approvals store, else with tasks/update
		approve bool
		want    string // the result's text begins so
	}{
		{"approved with tasks/update", false, true, "removed "},
		{"denied with tasks/update", false, false, `call to tool "remove" was not approved`},
		{"approved in the store", true, true, "removed "},
		{"denied in the store", true, false, `call to tool "remove" was denied by bob`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.ReplaceAll(tc.name, " ", "-")
			id := startTask(t, url, "alice", "remove", map[string]any{"path": path}, elicitCaps)
			d := pollUntil(t, url, "alice", id, isStatus(mcptool.StatusInputRequired))
			if len(d.InputRequests) != 1 || d.InputRequests["clawtool_approval"] == nil {
				t.Fatalf("input_required: %+v", d)
			}
			job, err := jobRecord(ctx, nc, id)
			if err != nil || job.Input == nil || job.Input.Approval == "" {
				t.Fatalf("the job: %+v %v", job, err)
			}
			pending, err := apv.Pending(ctx, time.Now())
			if err != nil || !hasRequest(pending, job.Input.Approval, "remove", "alice") {
				t.Fatalf("the approvals store's pending %+v (%v) lacks %s", pending, err, job.Input.Approval)
			}
			if tc.byStore {
				if _, err := apv.Answer(ctx, job.Input.Approval, policy.ApprovalAnswer{Approved: tc.approve, By: "bob"}, time.Now()); err != nil {
					t.Fatal(err)
				}
			} else if res := update(t, url, "alice", id, approve(tc.approve)); res.Error != nil {
				t.Fatalf("tasks/update: %+v", res.Error)
			}
			d = pollUntil(t, url, "alice", id, terminal)
			text, isErr := resultText(t, d)
			if d.Status != mcptool.StatusCompleted || !strings.HasPrefix(text, tc.want) || isErr == tc.approve {
				t.Fatalf("the task: %+v %s, want a result beginning %q", d, d.Result, tc.want)
			}
			// Settled once: the other way's answer is refused, the
			// request is no longer pending, the call ran at most once.
			if res := update(t, url, "alice", id, approve(!tc.approve)); res.Error == nil || res.Error.Code != -32602 {
				t.Errorf("a later tasks/update: %+v, want -32602", res.Error)
			}
			if _, err := apv.Answer(ctx, job.Input.Approval, policy.ApprovalAnswer{Approved: !tc.approve, By: "carol"}, time.Now()); err == nil {
				t.Errorf("a later answer in the store was taken")
			}
			pending, _ = apv.Pending(ctx, time.Now())
			if hasRequest(pending, job.Input.Approval, "remove", "alice") {
				t.Errorf("the request is still pending")
			}
			ran := 0
			for _, p := range lines(filepath.Join(dir, "removed")) {
				if p == path {
					ran++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.approve]; ran != want {
				t.Errorf("the call ran %d times, want %d", ran, want)
			}
		})
	}

	t.Run("control: no elicitation declared", func(t *testing.T) {
		id := startTask(t, url, "alice", "remove", map[string]any{"path": "control"}, map[string]any{"extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}})
		d := pollUntil(t, url, "alice", id, func(d mcptool.DetailedTask) bool {
			return d.Status.Terminal() || d.Status == mcptool.StatusInputRequired
		})
		text, isErr := resultText(t, d)
		if d.Status != mcptool.StatusCompleted || !isErr || !strings.Contains(text, "approval request ") {
			t.Fatalf("the task: %+v %s", d, d.Result)
		}
		id2 := startTask(t, url, "alice", "confirm", map[string]any{"text": "c"}, map[string]any{"extensions": map[string]any{mcptool.TasksExtension: map[string]any{}}})
		d = pollUntil(t, url, "alice", id2, func(d mcptool.DetailedTask) bool {
			return d.Status.Terminal() || d.Status == mcptool.StatusInputRequired
		})
		if text, isErr := resultText(t, d); d.Status != mcptool.StatusCompleted || !isErr || !strings.Contains(text, "elicitation") {
			t.Fatalf("confirm without elicitation: %+v %s", d, d.Result)
		}
	})
}

// jobRecord reads task id's job record from the bucket, whoever owns it.
func jobRecord(ctx context.Context, nc *nats.Conn, id string) (natstool.Job, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return natstool.Job{}, err
	}
	kv, err := js.KeyValue(ctx, mcptasks.DefaultBucket)
	if err != nil {
		return natstool.Job{}, err
	}
	e, err := kv.Get(ctx, id)
	if err != nil {
		return natstool.Job{}, err
	}
	var job natstool.Job
	return job, json.Unmarshal(e.Value(), &job)
}

// hasRequest reports whether recs holds the pending request id of
// principal for tool.
func hasRequest(recs []policy.ApprovalRecord, id, tool, principal string) bool {
	for _, r := range recs {
		if r.ID == id && r.Tool == tool && r.Principal == principal && r.State == policy.ApprovalPending {
			return true
		}
	}
	return false
}

// legacySession is a 2025-11-25 Streamable HTTP session as user that
// declared elicitation.
type legacySession struct {
	t              *testing.T
	url, user, sid string
}

func newLegacySession(t *testing.T, url, user string) *legacySession {
	t.Helper()
	s := &legacySession{t: t, url: url, user: user}
	s.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"elicitation": map[string]any{}},
		"clientInfo": map[string]any{"name": "legacy", "version": "0"}})
	if s.sid == "" {
		t.Fatal("no session")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	s.post(b).Body.Close()
	return s
}

// post POSTs body on the session.
func (s *legacySession) post(body []byte) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(principalHeader, s.user)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.sid = id
	}
	return resp
}

// call sends a request and returns its response, from JSON or the
// event stream.
func (s *legacySession) call(method string, params any) rpcResponse {
	s.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	resp := s.post(b)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	}
	var out rpcResponse
	if err := json.Unmarshal(data, &out); err != nil {
		s.t.Fatalf("%s: %d %q: %v", method, resp.StatusCode, data, err)
	}
	return out
}

// status is task id's status in the legacy form.
func (s *legacySession) status(id string) mcptool.TaskStatus {
	var lt mcptool.LegacyTask
	json.Unmarshal(s.call("tasks/get", map[string]any{"taskId": id}).Result, &lt)
	return lt.Status
}

// TestDurableInputLegacySurvivesServerKill: the 2025-11-25 form of
// TestDurableInputSurvivesServerKill. A durable task whose call asks is
// input_required on the process that created it, which gets SIGKILL; on
// a new process, another session of the same principal calls
// tasks/result, which carries the question (elicitation/create with the
// related-task _meta); the session's answer reaches the new process's
// worker, and the stream ends with the result.
func TestDurableInputLegacySurvivesServerKill(t *testing.T) {
	ns := startNATS(t)
	dir := t.TempDir()
	a, line := startChild(t, "serve", ns.ClientURL(), dir)
	sa := newLegacySession(t, strings.TrimPrefix(line, "serving "), "alice")
	res := sa.call("tools/call", map[string]any{"name": "confirm", "arguments": map[string]any{"text": "y"}, "task": map[string]any{}})
	var created mcptool.LegacyCreateTaskResult
	if res.Error != nil || json.Unmarshal(res.Result, &created) != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call: %s %+v", res.Result, res.Error)
	}
	id := created.Task.TaskID
	for i := 0; sa.status(id) != mcptool.StatusInputRequired; i++ {
		if i == 600 {
			t.Fatal("the task never asked")
		}
		time.Sleep(50 * time.Millisecond)
	}
	pidA := fmt.Sprint(a.Process.Pid)
	kill(a, childExited[a])

	_, line = startChild(t, "serve", ns.ClientURL(), dir)
	sb := newLegacySession(t, strings.TrimPrefix(line, "serving "), "alice")
	if st := sb.status(id); st != mcptool.StatusInputRequired {
		t.Fatalf("after the restart the task is %s", st)
	}
	if other := newLegacySession(t, sb.url, "mallory"); other.status(id) != "" {
		t.Fatalf("another principal sees the task")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	resp := sb.post(body)
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() map[string]json.RawMessage {
		for events.Scan() {
			if d, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("event %q: %v", d, err)
				}
				return m
			}
		}
		t.Fatal("the stream ended")
		return nil
	}
	q := next()
	if string(q["method"]) != `"elicitation/create"` || !strings.Contains(string(q["params"]), "Go on with y?") || !strings.Contains(string(q["params"]), id) {
		t.Fatalf("the question: %v", q)
	}
	ans, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": q["id"], "result": map[string]any{"action": "accept", "content": map[string]any{}}})
	sb.post(ans).Body.Close()
	final := next()
	if string(final["id"]) != "77" || !strings.Contains(string(final["result"]), "accept y") {
		t.Fatalf("the result: %v", final)
	}
	runs := lines(filepath.Join(dir, "confirm-runs"))
	if len(runs) != 2 || runs[0] != pidA || runs[1] == pidA {
		t.Errorf("runs %v: want one in the killed process %s, then one in the new one", runs, pidA)
	}
}
