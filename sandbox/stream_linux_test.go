package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestCmdStreamsALongRunningCommand talks to a sandboxed cat line by
// line: each line comes back before the next is written, so the command
// runs as long as its caller talks to it; what it streams is not kept in
// the Result, nor bounded by Limits.Output.
func TestCmdStreamsALongRunningCommand(t *testing.T) {
	requireSandbox(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	cmd := CommandContext(t.Context(), Policy{Limits: Limits{Output: 16}}, "/bin/cat")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	done := make(chan error, 1)
	go func() { done <- cmd.Run(); inR.Close(); outW.Close() }()
	lines := bufio.NewReader(outR)
	for _, l := range []string{"first line, longer than the output limit\n", "second\n"} {
		if _, err := io.WriteString(inW, l); err != nil {
			t.Fatal(err)
		}
		got, err := lines.ReadString('\n')
		if err != nil || got != l {
			t.Fatalf("read %q, %v; want %q", got, err, l)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v (%s)", err, stderr.String())
	}
	if len(cmd.Result.Stdout) != 0 || cmd.Result.Outcome != Exited {
		t.Errorf("result %+v: want no stdout kept and an exit", cmd.Result)
	}
}

// TestCmdStreamsOnlyNative: a backend other than Native that is not a
// CmdRunner cannot stream, and a Cmd asking it to runs nothing.
func TestCmdStreamsOnlyNative(t *testing.T) {
	ran := false
	cmd := CommandContext(context.Background(), Policy{}, "/bin/true")
	cmd.Backend = backendFunc(func() { ran = true })
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "stream a command's output") || ran {
		t.Fatalf("err %v, ran %v", err, ran)
	}
}

type backendFunc func()

func (f backendFunc) Run(context.Context, Policy, []string, io.Reader) (*Result, error) {
	f()
	return &Result{Outcome: Exited}, nil
}
