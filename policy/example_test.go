package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

func Example() {
	const policies = `
@id("readers")
permit (principal in Role::"reader", action == Action::"call", resource == Tool::"read_note")
when { context.args.name like "public/*" };
`
	a, err := policy.New("notes.cedar", []byte(policies))
	if err != nil {
		panic(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("read_note", "Reads a note.",
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "contents of " + in.Name, nil
		})))

	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"reader"}})
	fmt.Println(reg.Execute(ctx, "read_note", json.RawMessage(`{"name":"public/todo"}`)).Output)
	res := reg.Execute(ctx, "read_note", json.RawMessage(`{"name":"private/diary"}`))
	fmt.Println(res.Kind, res.Error)
	// Output:
	// contents of public/todo
	// denied you may not call tool "read_note" with these arguments; no permission covers this call
}

func ExampleAuthorizer_Grant() {
	const policies = `
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"deploy");
`
	a, _ := policy.New("deploy.cedar", []byte(policies))
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("deploy", "Deploys a version.",
		func(ctx context.Context, in struct {
			Version string `json:"version"`
		}) (string, error) {
			return "deployed " + in.Version, nil
		})))
	ctx := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann"})
	args := json.RawMessage(`{"version":"1.2.0"}`)

	res := reg.Execute(ctx, "deploy", args)
	req := res.Metadata["approval_request"].(policy.ApprovalRequest)
	fmt.Println(res.Kind, req.Tool, string(req.Args))

	// A person approves; the same call runs once.
	if err := a.Grant(req.ID); err != nil {
		panic(err)
	}
	fmt.Println(reg.Execute(ctx, "deploy", args).Output)
	fmt.Println(reg.Execute(ctx, "deploy", args).Kind)
	// Output:
	// denied deploy {"version":"1.2.0"}
	// deployed 1.2.0
	// denied
}
