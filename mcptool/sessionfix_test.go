package mcptool_test

import (
	"context"
	"net/http"
	"testing"
)

// TestHTTPSessionFixationAndReplay: a session ID is the server's to
// choose and the opener's alone. An initialize that names a session ID of
// the client's choosing is refused (404) and makes no session by that ID;
// Bob resuming Ann's stream (GET with Last-Event-ID and her session) is
// refused; after Ann's DELETE, her own token on the session gets 404. The
// controls: Ann's initialize without an ID gets a fresh server-chosen ID,
// and her call on it runs.
func TestHTTPSessionFixationAndReplay(t *testing.T) {
	s := newAuthServer(t)
	ann, bob := s.token(t, "ann", "writer"), s.token(t, "bob")
	const chosen = "FIXEDBYTHEATTACKER0000000000"
	if status, msg, h := send(t, s.url, rawCall{token: ann, session: chosen, version: "2025-11-25", body: initialize2025}); status != http.StatusNotFound || h.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize naming a chosen session: %d %q (session %q), want 404", status, msg, h.Get("Mcp-Session-Id"))
	}
	if status, _, _ := send(t, s.url, rawCall{token: ann, session: chosen, version: "2025-11-25", body: callBody("whoami")}); status != http.StatusNotFound {
		t.Errorf("a call on the chosen session: %d, want 404", status)
	}
	sid := openSession(t, s.url, ann)
	if sid == chosen {
		t.Fatal("the server took the client's session ID")
	}
	if status, msg, _ := send(t, s.url, rawCall{token: ann, session: sid, version: "2025-11-25", body: callBody("whoami")}); status != http.StatusOK || s.ranCount("whoami", "ann") != 1 {
		t.Fatalf("control: Ann's call on her session: %d %s", status, msg)
	}

	// Bob replays Ann's stream from its first event.
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	req.Header.Set("Authorization", "Bearer "+bob)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", "0_0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("Bob's GET with Last-Event-ID on Ann's session: %d, want 404", resp.StatusCode)
	}

	if status, msg, _ := send(t, s.url, rawCall{method: http.MethodDelete, token: ann, session: sid, version: "2025-11-25"}); status != http.StatusNoContent {
		t.Fatalf("Ann's DELETE: %d %q", status, msg)
	}
	if status, msg, _ := send(t, s.url, rawCall{token: ann, session: sid, version: "2025-11-25", body: callBody("whoami")}); status != http.StatusNotFound || s.ranCount("whoami", "ann") != 1 {
		t.Errorf("Ann's call after her DELETE: %d %q, want 404 and nothing run", status, msg)
	}
}
