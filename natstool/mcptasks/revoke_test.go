package mcptasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/miniopenclaw/tool/policy"
)

// TestDurableResumeDecidedForItsRequest is the durable form of
// mcptool's TestTaskResumeDecidedForItsRequest: a task's call that waits
// for an approval runs again on a worker when tasks/update answers, and
// that run is decided for the principal of the tasks/update request (its
// headers), not the token that made the task. Alice, an admin, starts a
// removal that asks; her role is revoked before she answers; the
// removal must not run. The control answers with the role still held.
func TestDurableResumeDecidedForItsRequest(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	ctx := context.Background()
	apv, err := natstool.OpenApprovals(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs(), Approvals: apv})
	if err != nil {
		t.Fatal(err)
	}
	a, err := policy.New("ask.cedar", []byte(`
@id("ask-remove")
@effect("ask")
permit (principal in Role::"admin", action == Action::"call", resource == Tool::"remove");
`), policy.WithApprover(mcptool.ElicitApprover{}), policy.WithApprovalStore(apv))
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	r.Register(tool.Must(tool.New("remove", "Removes a file.", func(_ context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran.Add(1)
		return "removed " + in.Path, nil
	}, tool.WithTask(tool.TaskOptional))))
	w, err := store.Jobs().Work(r, "revoke-test", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	srv := mcptool.NewServer(r, mcptool.WithTaskStore(store))
	t.Cleanup(func() { srv.Close() })
	// The test's user header is "alice|role,role".
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		id, roles, _ := strings.Cut(req.Header.Get(principalHeader), "|")
		p := policy.Principal{ID: id}
		if roles != "" {
			p.Roles = strings.Split(roles, ",")
		}
		srv.ServeHTTP(rw, req.WithContext(policy.WithPrincipal(req.Context(), p)))
	}))
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"

	for _, tc := range []struct {
		name     string
		answerAs string
		ran      int32
		want     string // the result's text begins so
	}{
		{"control: the role still held", "alice|admin", 1, "removed "},
		{"the role revoked before the answer", "alice|", 1, `you may not call tool "remove"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := startTask(t, url, "alice|admin", "remove", map[string]any{"path": tc.name}, elicitCaps)
			d := pollUntil(t, url, "alice|admin", id, isStatus(mcptool.StatusInputRequired))
			if d.InputRequests["clawtool_approval"] == nil {
				t.Fatalf("input_required: %+v", d)
			}
			res := rpcCaps(t, url, tc.answerAs, "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{
				"clawtool_approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}}, elicitCaps)
			if res.Error != nil {
				t.Fatalf("tasks/update: %+v", res.Error)
			}
			d = pollUntil(t, url, tc.answerAs, id, func(d mcptool.DetailedTask) bool { return d.Status.Terminal() })
			var out struct {
				Content []struct{ Text string }
			}
			json.Unmarshal(d.Result, &out)
			text := ""
			if len(out.Content) > 0 {
				text = out.Content[0].Text
			}
			if !strings.HasPrefix(text, tc.want) || ran.Load() != tc.ran {
				t.Errorf("%s %s: ran %d in all, want %d and a result beginning %q", d.Status, d.Result, ran.Load(), tc.ran, tc.want)
			}
		})
	}
}
