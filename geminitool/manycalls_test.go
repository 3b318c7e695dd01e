package geminitool

import (
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// TestResponseOfManyPartsBounded is an attack: a response whose parts
// (or candidates) number in the hundreds of thousands, each read, and
// each functionCall given an id, before anything could count them. Past
// providercall.MaxElements the response is refused as malformed, having
// read no more than that. Control: MaxElements parts are all read.
func TestResponseOfManyPartsBounded(t *testing.T) {
	const many = 200_000
	for _, tt := range []struct {
		name string
		make func(n int) []byte
	}{
		{"parts", func(n int) []byte {
			return providercall.Repeat(`{"candidates":[{"content":{"role":"model","parts":[`, `{"functionCall":{}}`, n, `]}}]}`)
		}},
		{"candidates", func(n int) []byte {
			return providercall.Repeat(`{"candidates":[{"content":{"parts":[{"functionCall":{}}]}},`, `{}`, n-1, `]}`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := Calls(tt.make(providercall.MaxElements))
			if err != nil || len(calls) == 0 {
				t.Fatalf("control: %d elements: %d calls, %v", providercall.MaxElements, len(calls), err)
			}
			data := tt.make(many)
			var got []tool.Call
			alloc := providercall.Allocated(func() { got, err = Calls(data) })
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "more than") {
				t.Errorf("%d elements: %d calls, %v; want ErrMalformed naming the bound", many, len(got), err)
			}
			if limit := uint64(8*len(data) + 16<<20); alloc > limit {
				t.Errorf("parsing %d bytes allocated %d MiB, want at most %d MiB", len(data), alloc>>20, limit>>20)
			}
		})
	}
}
