package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestKVStorePerPrincipal: clawtool serve --http with bearer tokens
// serves several principals, and the built-in kv store was one for all
// of them: Bob listed and read the note Ann kept ("ann-secret"), and
// could fill the store so that Ann could keep none. Each principal now
// has a store of its own. Control: Ann reads her own note back, on
// another session of hers.
func TestKVStorePerPrincipal(t *testing.T) {
	f := newHFix(t)
	kv := func(sid, args string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"kv","arguments":` + args + `}}`
		status, _, msg, _ := f.send(f.addr, eraSession, hReq{session: sid, body: body, headers: [][2]string{authHeader(f.token(sessionOwner(f, sid)))}})
		if status != http.StatusOK {
			t.Fatalf("kv %s: %d %s", args, status, msg)
		}
		return msg
	}
	f.annSID = f.openSession(f.addr, f.token("ann"))
	f.bobSID = f.openSession(f.addr, f.token("bob"))
	if msg := kv(f.annSID, `{"op":"set","key":"ann-secret","value":"hunter2"}`); !strings.Contains(msg, "stored") {
		t.Fatalf("Ann's set: %s", msg)
	}
	if msg := kv(f.bobSID, `{"op":"list"}`); strings.Contains(msg, "ann-secret") {
		t.Errorf("Bob lists Ann's key: %s", msg)
	}
	if msg := kv(f.bobSID, `{"op":"get","key":"ann-secret"}`); strings.Contains(msg, "hunter2") {
		t.Errorf("Bob reads Ann's note: %s", msg)
	}
	// Control: the note is there, for Ann, on a new session of hers.
	ann2 := f.openSession(f.addr, f.token("ann"))
	if msg := kv(ann2, `{"op":"get","key":"ann-secret"}`); !strings.Contains(msg, "hunter2") {
		t.Errorf("control: Ann's second session does not read her note: %s", msg)
	}
}

// sessionOwner returns whose session sid is, among Ann's and Bob's first.
func sessionOwner(f *hFix, sid string) string {
	if sid == f.bobSID {
		return "bob"
	}
	return "ann"
}
