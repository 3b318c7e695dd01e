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

// A program that runs many commands keeps a backend of its own: its spare
// helpers (started in the background for the next run of the same shape)
// are its alone, and Close reaps them.
func ExampleNewNative() {
	n := sandbox.NewNative(sandbox.NativeOptions{Spares: 2})
	defer n.Close()
	for i := range 2 {
		r, err := n.Run(context.Background(), sandbox.Policy{}, []string{"sh", "-c", "echo run $0", fmt.Sprint(i)}, nil)
		if err != nil {
			fmt.Println("refused:", err)
			return
		}
		fmt.Printf("%s", r.Stdout)
	}
	// Output:
	// run 0
	// run 1
}
