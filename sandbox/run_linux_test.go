package sandbox

import (
	"context"
	"testing"
)

func TestRunEcho(t *testing.T) {
	r, err := Run(context.Background(), Policy{}, "echo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || string(r.Stdout) != "hello\n" {
		t.Fatalf("result %+v stdout %q stderr %q", r, r.Stdout, r.Stderr)
	}
	t.Logf("layers %v in %v", r.Layers, r.Duration)
}
