package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/policy"
)

// ExampleSession_Resume pauses a run on a call that needs a person's
// approval, saves it, and resumes it, as another process would, once a
// lead approved the call. A second resume of the same saved run is
// refused: the approval was used.
func ExampleSession_Resume() {
	const policies = `
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"deploy");
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"deploy");
`
	// A stand-in model: it calls deploy, then reports what it got.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		json.NewDecoder(r.Body).Decode(&req)
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			answer, _ := json.Marshal("Done: " + last.Content)
			fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%s}}]}`, answer)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"deploy","arguments":"{\"version\":\"1.2.0\"}"}}]}}]}`)
	}))
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "approvals-")
	defer os.RemoveAll(dir)

	// Each process makes its Agent the same way; they share the store.
	newAgent := func() (*agent.Agent, *policy.Authorizer) {
		authz, err := policy.New("deploy.cedar", []byte(policies), policy.WithApprovalStore(&policy.FileApprovalStore{Dir: dir}))
		if err != nil {
			log.Fatal(err)
		}
		reg := tool.NewRegistry(tool.WithAuthorizer(authz))
		reg.Register(tool.Must(tool.New("deploy", "Deploys a version.", func(ctx context.Context, in struct {
			Version string `json:"version"`
		}) (string, error) {
			return "deployed " + in.Version, nil
		})))
		return agent.New(agent.OpenAI(srv.URL, "", "local"), reg, agent.WithPause(authz)), authz
	}
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})

	a, authz := newAgent()
	_, err := a.Run(bob, "Deploy 1.2.0.")
	var paused *agent.PausedError
	if !errors.As(err, &paused) {
		log.Fatal(err)
	}
	pending := paused.State.Pending()[0]
	fmt.Println("waits:", pending.Call.Name, string(pending.Call.Args))
	saved, _ := paused.State.MarshalJSON() // to a file, a database

	// A lead approves (clawtool approvals approve ID, say).
	ann := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
	authz.Answer(ann, pending.Approval, true, "")

	// Later, in another process.
	resume := func() (string, error) {
		st, err := agent.ParseRunState(saved)
		if err != nil {
			return "", err
		}
		b, _ := newAgent()
		s, err := b.Restore(st)
		if err != nil {
			return "", err
		}
		return s.Resume(bob)
	}
	answer, err := resume()
	fmt.Println(answer, err)
	_, err = resume()
	fmt.Println(errors.Is(err, policy.ErrApprovalUsed))
	// Output:
	// waits: deploy {"version":"1.2.0"}
	// Done: deployed 1.2.0 <nil>
	// true
}
