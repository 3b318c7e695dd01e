package anthropictool

import (
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/providercall"
)

// TestResponseOfManyBlocksBounded is an attack: a response whose content
// holds hundreds of thousands of tool_use blocks, each read and given an
// id before anything could count them (the agent's 32 MiB bound let
// about a million through). Past providercall.MaxElements blocks the
// response is refused as malformed, having read no more than that.
// Control: MaxElements blocks are all read.
func TestResponseOfManyBlocksBounded(t *testing.T) {
	const many = 200_000
	resp := func(n int) []byte {
		return providercall.Repeat(`{"role":"assistant","content":[`, `{"type":"tool_use"}`, n, `]}`)
	}
	calls, err := Calls(resp(providercall.MaxElements))
	if err != nil || len(calls) != providercall.MaxElements {
		t.Fatalf("control: %d blocks: %d calls, %v", providercall.MaxElements, len(calls), err)
	}
	data := resp(many)
	alloc := providercall.Allocated(func() { calls, err = Calls(data) })
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d blocks: %d calls, %v; want ErrMalformed naming the bound", many, len(calls), err)
	}
	if limit := uint64(8*len(data) + 16<<20); alloc > limit {
		t.Errorf("parsing %d bytes allocated %d MiB, want at most %d MiB", len(data), alloc>>20, limit>>20)
	}
}

// TestTextOfManyBlocksLinear is an attack: a reply of thousands of text
// blocks, each of a few hundred bytes. Text joined them with +=, copying
// the text so far for each block: the 8,192 blocks a reply may hold, of
// 4 KiB each (32 MiB), meant copying about 128 GiB. Joining is linear:
// the bytes allocated stay proportional to the reply. Control: the text
// is still the blocks' text, joined.
func TestTextOfManyBlocksLinear(t *testing.T) {
	const n = 4000
	block := strings.Repeat("x", 500)
	data := providercall.Repeat(`{"role":"assistant","content":[`, `{"type":"text","text":"`+block+`"}`, n, `]}`)
	var text string
	alloc := providercall.Allocated(func() { text = Text(data) })
	if text != strings.Repeat(block, n) {
		t.Fatalf("control: Text gave %d bytes, want the %d blocks' text joined", len(text), n)
	}
	if limit := uint64(16*len(data) + 16<<20); alloc > limit {
		t.Errorf("joining %d blocks (%d bytes) allocated %d MiB, want at most %d MiB", n, len(data), alloc>>20, limit>>20)
	}
}
