package mcptool_test

import (
	"fmt"
	"net/http"
	"testing"

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
