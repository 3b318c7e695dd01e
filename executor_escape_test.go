package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestEscapedReferenceKey is an attack: the key "$output" is reserved
// for references, but the executor looked for it as raw bytes, so a model
// that spelled it with a JSON escape ("\u0024output", the same key once
// decoded) got its object past the reservation: it was neither
// substituted nor refused, and reached the tool as a literal. An escaped
// reference is now a reference like any other. Control: the plain
// spelling behaves the same way.
func TestEscapedReferenceKey(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(tool.Must(tool.New("echo", "Echoes its arguments.",
		func(_ context.Context, in map[string]any) (map[string]any, error) { return in, nil }))); err != nil {
		t.Fatal(err)
	}
	ex := tool.NewExecutor(r)
	for _, key := range []string{`$output`, `\u0024output`, `\u0024\u006futput`} {
		t.Run(key, func(t *testing.T) {
			// Alone, a reference to a call not in the batch refuses the batch.
			out, err := ex.Run(context.Background(), []tool.Call{
				{ID: "a", Name: "echo", Args: json.RawMessage(`{"x":{"` + key + `":"nowhere"}}`)},
			})
			if !errors.Is(err, tool.ErrInvalidBatch) || !out[0].Result.IsError {
				t.Errorf("a reference to a missing call ran: %q, %v", out[0].Result.Output, err)
			}
			// With its target, it is substituted.
			out, err = ex.Run(context.Background(), []tool.Call{
				{ID: "a", Name: "echo", Args: json.RawMessage(`{"x":{"` + key + `":"b","pointer":"/y"}}`)},
				{ID: "b", Name: "echo", Args: json.RawMessage(`{"y":42}`)},
			})
			if err != nil || out[0].Result.Output != `{"x":42}` {
				t.Errorf("a reference to b gave %q, %v; want b's value substituted", out[0].Result.Output, err)
			}
		})
	}
}

// TestDeepReferenceKey is an attack: references were read to 64 levels
// whatever the registry accepted, so under a raised depth limit
// (WithArgumentLimits) a reference nested deeper reached the tool as a
// literal, neither substituted nor refused. Arguments are now read for
// references as deep as the registry accepts them. Control: at 62 levels
// the reference was always read.
func TestDeepReferenceKey(t *testing.T) {
	r := tool.NewRegistry(tool.WithArgumentLimits(0, 200))
	if err := r.Register(tool.Must(tool.New("echo", "Echoes its arguments.",
		func(_ context.Context, in map[string]any) (map[string]any, error) { return in, nil }))); err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{62, 63, 100, 190} {
		args := `{"x":` + strings.Repeat(`[`, depth) + `{"$output":"nowhere"}` + strings.Repeat(`]`, depth) + `}`
		out, err := tool.NewExecutor(r).Run(context.Background(), []tool.Call{{ID: "a", Name: "echo", Args: json.RawMessage(args)}})
		if !errors.Is(err, tool.ErrInvalidBatch) || !out[0].Result.IsError {
			t.Errorf("depth %d: a reference to a missing call ran: %.60q…, %v", depth, out[0].Result.Output, err)
		}
	}
}
