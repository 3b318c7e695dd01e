package openaitool

import (
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// TestResponseOfManyElementsBounded is an attack: a response whose array
// of calls (or of choices, or of output items) holds hundreds of
// thousands of "{}" elements. Each became a call with an id made for it
// before anything could count them: the agent's 32 MiB bound let eleven
// million through, 10 GiB of allocations. Past providercall.MaxElements
// elements the response is refused as malformed, having read no more
// than that. Control: MaxElements calls are all read.
func TestResponseOfManyElementsBounded(t *testing.T) {
	const many = 200_000
	for _, tt := range []struct {
		name  string
		parse func([]byte) ([]tool.Call, error)
		make  func(n int) []byte
	}{
		{"chat tool_calls", ChatCalls, func(n int) []byte {
			return providercall.Repeat(`{"choices":[{"message":{"role":"assistant","tool_calls":[`, `{}`, n, `]}}]}`)
		}},
		{"chat choices", ChatCalls, func(n int) []byte {
			return providercall.Repeat(`{"choices":[{"message":{"role":"assistant","tool_calls":[{}]}},`, `{}`, n-1, `]}`)
		}},
		{"responses output", ResponsesCalls, func(n int) []byte {
			return providercall.Repeat(`{"output":[`, `{"type":"function_call"}`, n, `]}`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := tt.parse(tt.make(providercall.MaxElements))
			if err != nil || len(calls) == 0 {
				t.Fatalf("control: %d elements: %d calls, %v", providercall.MaxElements, len(calls), err)
			}
			data := tt.make(many)
			var got []tool.Call
			alloc := providercall.Allocated(func() { got, err = tt.parse(data) })
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "more than") {
				t.Errorf("%d elements: %d calls, %v; want ErrMalformed naming the bound", many, len(got), err)
			}
			if limit := uint64(8*len(data) + 16<<20); alloc > limit { // linear in the input, not per element
				t.Errorf("parsing %d bytes allocated %d MiB, want at most %d MiB", len(data), alloc>>20, limit>>20)
			}
		})
	}
}
