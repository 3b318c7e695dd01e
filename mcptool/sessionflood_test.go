package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
)

// TestHTTPSessionFlood: a caller initializes 2025-11-25 sessions without
// end and never ends one (DELETE). Each is kept for ever, with its
// goroutines: the server's memory grows with every initialize. The server
// keeps at most so many sessions of one caller, ending its oldest for a
// new one, and so many in all, ending the oldest of any caller; a request
// on an ended session gets 404, and its client starts a new one, as the
// specification says. Control: under bounds the flood does not reach,
// every session stays.
func TestHTTPSessionFlood(t *testing.T) {
	const flood = 10
	alive := func(t *testing.T, url, token, sid string) bool {
		t.Helper()
		status, msg, _ := send(t, url, rawCall{token: token, session: sid, version: "2025-11-25", body: listBody})
		if status != http.StatusOK && status != http.StatusNotFound {
			t.Fatalf("tools/list on session: %d %s", status, msg)
		}
		return status == http.StatusOK
	}
	t.Run("control", func(t *testing.T) {
		s := newAuthServer(t, mcptool.WithSessionLimits(1000, 1000))
		ann := s.token(t, "ann")
		for i := range flood {
			if sid := openSession(t, s.url, ann); !alive(t, s.url, ann, sid) {
				t.Fatalf("session %d is not served", i)
			}
		}
		if n := mcptool.LiveSessions(s.srv); n != flood {
			t.Fatalf("control: %d sessions live, want all %d kept", n, flood)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		const perCaller, total = 3, 5
		s := newAuthServer(t, mcptool.WithSessionLimits(perCaller, total))
		ann := s.token(t, "ann")
		var sids []string
		for range flood {
			sids = append(sids, openSession(t, s.url, ann))
			if n := mcptool.LiveSessions(s.srv); n > perCaller {
				t.Fatalf("%d sessions of one caller live, want at most %d", n, perCaller)
			}
		}
		for i, sid := range sids {
			if want := i >= flood-perCaller; alive(t, s.url, ann, sid) != want {
				t.Errorf("session %d of %d: served %v, want %v (the newest %d kept)", i, flood, !want, want, perCaller)
			}
		}
		// Other callers: the sessions in all stay within total, the
		// oldest going first, and each caller's newest is served.
		var last []string
		for i := range 3 {
			tok := s.token(t, fmt.Sprint("user", i))
			var sid string
			for range perCaller {
				sid = openSession(t, s.url, tok)
			}
			if n := mcptool.LiveSessions(s.srv); n > total {
				t.Fatalf("%d sessions live, want at most %d", n, total)
			}
			last = append(last, tok, sid)
		}
		if tok, sid := last[len(last)-2], last[len(last)-1]; !alive(t, s.url, tok, sid) {
			t.Error("the newest session is not served")
		}
	})
}

// TestHTTPListenFlood: a 2026-07-28 caller opens subscriptions/listen
// streams without end; each lasts until its client goes, holding the
// server's goroutines. The server serves at most so many of one caller
// at once, ending the oldest for a new one (its client listens anew).
// Control: under a bound the flood does not reach, every stream stays.
func TestHTTPListenFlood(t *testing.T) {
	const flood = 6
	listen := func(t *testing.T, url, token string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			cancel()
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		return resp, cancel
	}
	waitLive := func(t *testing.T, s *authServer, want int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		for mcptool.LiveListens(s.srv) != want {
			select {
			case <-ctx.Done():
				t.Fatalf("%d listen streams live, want %d", mcptool.LiveListens(s.srv), want)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	t.Run("control", func(t *testing.T) {
		s := newAuthServer(t, mcptool.WithSessionLimits(1000, 1000))
		ann := s.token(t, "ann")
		for range flood {
			resp, cancel := listen(t, s.url, ann)
			defer cancel()
			defer resp.Body.Close()
		}
		waitLive(t, s, flood)
	})
	t.Run("bounded", func(t *testing.T) {
		const perCaller = 2
		s := newAuthServer(t, mcptool.WithSessionLimits(perCaller, 100))
		ann := s.token(t, "ann")
		var resps []*http.Response
		for range flood {
			resp, cancel := listen(t, s.url, ann)
			defer cancel()
			defer resp.Body.Close()
			resps = append(resps, resp)
			if n := mcptool.LiveListens(s.srv); n > perCaller {
				t.Fatalf("%d listen streams of one caller live, want at most %d", n, perCaller)
			}
		}
		// The oldest streams were ended: their bodies end.
		for i, resp := range resps[:flood-perCaller] {
			if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("stream %d: %v, want it ended", i, err)
			}
		}
		waitLive(t, s, perCaller)
	})
}
