//go:build linux

package sandbox_test

import (
	"context"
	"fmt"

	"github.com/miniopenclaw/tool/sandbox"
)

// A command runs with no network, a read-only root and a private /tmp; its
// outcome is classified.
func ExampleRun() {
	r, err := sandbox.Run(context.Background(), sandbox.Policy{}, "sh", "-c", "echo hello; echo oops >&2; exit 3")
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Printf("%s%s%s\n", r.Stdout, r.Stderr, r.Summary())
	// Output:
	// hello
	// oops
	// exited with status 3
}

// Output beyond Limits.Output kills the run.
func ExampleRun_outputLimit() {
	p := sandbox.Policy{Limits: sandbox.Limits{Output: 1000}}
	r, err := sandbox.Run(context.Background(), p, "yes")
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(r.Outcome, r.Truncated, len(r.Stdout))
	// Output:
	// output_limit true 1000
}

// A tool's own subprocess moves into the sandbox by replacing
// exec.CommandContext with sandbox.CommandContext.
func ExampleCommandContext() {
	cmd := sandbox.CommandContext(context.Background(), sandbox.Policy{}, "uname", "-n")
	out, err := cmd.Output()
	fmt.Printf("%q %v\n", out, err)
	// Output:
	// "sandbox\n" <nil>
}
