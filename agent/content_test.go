package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/providercall"
)

// TestContentOfManyPartsLinear is an attack: a Chat Completions reply
// whose content is an array of many small text parts. contentText joined
// them with +=, copying the text so far for each part: 80,000 parts
// (1.7 MB) took 13 s, and a reply of the 32 MiB bound would take hours
// before the loop went on. Joining is linear: the bytes allocated stay
// proportional to the reply. Control: the text is still the parts'
// text, joined.
func TestContentOfManyPartsLinear(t *testing.T) {
	const n = 20_000
	raw := json.RawMessage(providercall.Repeat("[", `{"type":"text","text":"xxxxxxxxxx"}`, n, "]"))
	var text string
	alloc := providercall.Allocated(func() { text = contentText(raw) })
	if text != strings.Repeat("xxxxxxxxxx", n) {
		t.Fatalf("control: contentText gave %d bytes, want the %d parts' text joined", len(text), n)
	}
	if limit := uint64(16*len(raw) + 16<<20); alloc > limit {
		t.Errorf("joining %d parts (%d bytes) allocated %d MiB, want at most %d MiB", n, len(raw), alloc>>20, limit>>20)
	}
}
