package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// A command-line host makes its calls as the user its command line names;
// a call that names its own principal is still decided for that one.
func ExampleWithDefaultPrincipal() {
	a, _ := policy.New("ops.cedar", []byte(`permit (principal in Role::"ops", action == Action::"call", resource == Tool::"restart");`),
		policy.WithDefaultPrincipal(policy.Principal{ID: "ann", Roles: []string{"ops"}}))
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("restart", "Restarts a service.", func(ctx context.Context, in struct{}) (string, error) {
		return "restarted", nil
	})))
	fmt.Println(reg.Execute(context.Background(), "restart", nil).Output)
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	fmt.Println(reg.Execute(bob, "restart", nil).Kind)
	// Output:
	// restarted
	// denied
}

// Explain shows what a call would be decided on, its arguments checked
// and their defaults applied, without running the tool.
func ExampleAuthorizer_Explain() {
	a, _ := policy.New("notes.cedar", []byte(`@id("short-reads")
permit (principal, action == Action::"call", resource == Tool::"read_note")
when { context.args.limit <= 100 };`))
	readNote := tool.Must(tool.New("read_note", "Reads a note.", func(ctx context.Context, in struct {
		Name  string `json:"name"`
		Limit int    `json:"limit,omitempty" default:"50"`
	}) (string, error) {
		panic("explain does not run the tool")
	}))
	e, err := a.Explain(context.Background(), readNote, json.RawMessage(`{"name":"todo"}`))
	fmt.Println(e.Decision.Effect, e.Decision.Policies, string(e.Args), err)
	_, err = a.Explain(context.Background(), readNote, json.RawMessage(`{"name":7}`))
	fmt.Println(err != nil)
	// Output:
	// allow [short-reads] {"name":"todo","limit":50} <nil>
	// true
}
