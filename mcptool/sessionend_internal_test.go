package mcptool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// headerProbe is a ResponseWriter that calls at, once, when the status
// line is written: the moment the client may learn the answer.
type headerProbe struct {
	*httptest.ResponseRecorder
	at   func(code int)
	done bool
}

func (p *headerProbe) WriteHeader(code int) {
	if !p.done {
		p.done = true
		p.at(code)
	}
	p.ResponseRecorder.WriteHeader(code)
}

func (p *headerProbe) Write(b []byte) (int, error) {
	if !p.done {
		p.WriteHeader(http.StatusOK)
	}
	return p.ResponseRecorder.Write(b)
}

// TestSessionForgottenBeforeDeleteAnswers: a 2025-11-25 session a DELETE
// ends is forgotten by the server (its binding to a caller, and its entry
// for the direct session path) before the DELETE's answer leaves, so no
// request the client sends after the answer is served on the session:
// the direct path answered a tools/call on a deleted session about once
// in 200 tries while a goroutine had yet to forget it (this test, of 500
// rounds, failed in every one of 5 runs before the fix). The control
// checks that the session was known, and served the direct path, before
// the DELETE.
func TestSessionForgottenBeforeDeleteAnswers(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("echo", "Echoes.", func(context.Context, struct{}) (string, error) { return "ran", nil })))
	s := NewServer(r)
	defer s.Close()
	post := func(sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set(headerSessionID, sid)
			req.Header.Set(headerProtocolVersion, legacyVersion)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	for i := range 500 {
		w := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
		sid := w.Header().Get(headerSessionID)
		if w.Code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %s", w.Code, w.Body)
		}
		post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		// The control: the session is known and its call is served.
		if w := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"ran"`) {
			t.Fatalf("control: a call on the live session: %d %s", w.Code, w.Body)
		}
		if _, live := s.live.Load(sid); !live {
			t.Fatal("control: the live session is not in the direct path's table")
		}

		req := httptest.NewRequest(http.MethodDelete, "http://127.0.0.1/mcp", nil)
		req.Header.Set(headerSessionID, sid)
		req.Header.Set(headerProtocolVersion, legacyVersion)
		var live, bound bool
		probe := &headerProbe{ResponseRecorder: httptest.NewRecorder(), at: func(int) {
			_, live = s.live.Load(sid)
			_, bound = s.bound.Load(sid)
		}}
		s.ServeHTTP(probe, req)
		if probe.Code != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", probe.Code, probe.Body)
		}
		if live || bound {
			t.Fatalf("round %d: when the DELETE answered, the session was still live %v, bound %v", i, live, bound)
		}
		if w := post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`); w.Code != http.StatusNotFound {
			t.Fatalf("a call after the DELETE: %d %s, want 404", w.Code, w.Body)
		}
	}
}
