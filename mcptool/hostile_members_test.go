package mcptool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// manyKeys returns a JSON object of n members "k0" … after the members
// first.
func manyKeys(first string, n int) string {
	var b strings.Builder
	b.WriteString("{" + first)
	for i := range n {
		fmt.Fprintf(&b, `,"k%d":0`, i)
	}
	b.WriteString("}")
	return b.String()
}

// TestHostileManyMembers: the direct session path reads every
// notifications/cancelled of a 2025-11-25 session (to cancel the call it
// runs) with its own JSON reader, which checked each key against all the
// keys before it: a notification whose object (or params) had n keys took
// n²/2 comparisons, 4 s of a core for 40,000 keys in 430 KB, minutes for
// a body of 4 MiB, and a client may have 256 at once. The control: read
// without the bound on members, 4,000 keys cost their 7,998,000
// comparisons. With it, the reader gives such an object up after 16
// members, and go-sdk (which reads it in linear time) answers the
// notifications (1 MiB), at the top level and in params, at once.
func TestHostileManyMembers(t *testing.T) {
	const n = 4000
	obj := manyKeys(`"requestId":1`, n)
	if compared, ok := mcptool.KeysCompared([]byte(obj), n+1); !ok || compared != (n+1)*n/2 {
		t.Fatalf("control: %d keys without the bound: %d comparisons (read all: %v), want %d", n+1, compared, ok, (n+1)*n/2)
	}
	if compared, ok := mcptool.KeysCompared([]byte(obj), 0); ok || compared > 16*15/2 {
		t.Errorf("%d keys: %d comparisons (read all: %v), want the object given up after 16 members", n+1, compared, ok)
	}

	reg := tool.NewRegistry()
	reg.Register(tool.Must(tool.New("t0", "A tool.", func(context.Context, struct{}) (string, error) { return "", nil })))
	srv := mcptool.NewServer(reg)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	sid := openSession(t, hs.URL, "")
	const big = 90_000 // about 1 MiB: 4·10⁹ comparisons read key by key
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":` + manyKeys(`"requestId":1`, big) + `}`,
		manyKeys(`"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}`, big),
	} {
		if status, msg, _ := send(t, hs.URL, rawCall{session: sid, version: "2025-11-25", body: body}); status != http.StatusAccepted {
			t.Errorf("a notifications/cancelled of %d bytes: %d %q, want 202", len(body), status, msg)
		}
	}
	if status, msg, _ := send(t, hs.URL, rawCall{session: sid, version: "2025-11-25", body: callBody("t0")}); status != http.StatusOK {
		t.Errorf("control: a call on the session after: %d %q", status, msg)
	}
}
