package agent_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool/agent"
)

// savedRun returns the document of a run paused on deploy.
func savedRun(t testing.TB) []byte {
	srv := deployModel(t)
	var deploys atomic.Int32
	p := newProcess(t, t.TempDir(), &deploys)
	_, err := p.agent(srv).Run(bob, "Deploy.")
	var paused *agent.PausedError
	if !errors.As(err, &paused) {
		t.Fatalf("Run: %v", err)
	}
	b, err := paused.State.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reseal recomputes the checksum of a document whose run was edited, so
// that the check under test is the one after the checksum.
func reseal(t testing.TB, doc []byte, edit func(run map[string]any)) []byte {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if err := json.Unmarshal(d["run"], &run); err != nil {
		t.Fatal(err)
	}
	edit(run)
	body, _ := json.Marshal(run)
	st := struct {
		Format  string          `json:"format"`
		Version int             `json:"version"`
		SHA256  string          `json:"sha256"`
		Run     json.RawMessage `json:"run"`
	}{"clawtool.agent.run", 1, sha256hex(body), body}
	out, _ := json.Marshal(st)
	return out
}

// Every document that is not a usable saved run is refused with an
// error wrapping ErrBadRunState that says why; the control (the document
// as saved) is read.
func TestParseRunStateRefuses(t *testing.T) {
	good := savedRun(t)
	if _, err := agent.ParseRunState(good); err != nil {
		t.Fatalf("control: %v", err)
	}
	calls := func(f func(c []any)) func(map[string]any) {
		return func(run map[string]any) { f(run["calls"].([]any)) }
	}
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"empty", nil, "not a saved run document"},
		{"not JSON", []byte("hello"), "truncated or not JSON"},
		{"truncated", good[:len(good)/2], "truncated or not JSON"},
		{"truncated by one byte", good[:len(good)-1], "truncated or not JSON"},
		{"data after", append(bytes.Clone(good), []byte(` {}`)...), "data after the document"},
		{"oversized", append(append([]byte("{"), bytes.Repeat([]byte(" "), agent.MaxRunStateBytes)...), good[1:]...), "more than the"},
		{"another version", bytes.Replace(good, []byte(`"version":1`), []byte(`"version":2`), 1), "version 2; this build reads version 1"},
		{"another format", bytes.Replace(good, []byte(`"clawtool.agent.run"`), []byte(`"something.else"`), 1), `format "something.else"`},
		{"unknown field", bytes.Replace(good, []byte(`"version":1`), []byte(`"version":1,"extra":true`), 1), "unknown field"},
		{"damaged", bytes.Replace(good, []byte(`1.2.0`), []byte(`6.6.6`), 1), "checksum does not match"},
		{"unknown API", reseal(t, good, func(r map[string]any) { r["api"] = "gopher" }), `unknown API "gopher"`},
		{"no messages", reseal(t, good, func(r map[string]any) { r["messages"] = []any{} }), "0 messages"},
		{"message not an object", reseal(t, good, func(r map[string]any) { r["messages"] = []any{"hi"} }), "message 0 is not a JSON object"},
		{"step 0", reseal(t, good, func(r map[string]any) { r["step"] = 0 }), "step 0"},
		{"no calls", reseal(t, good, func(r map[string]any) { r["calls"] = []any{} }), "0 calls"},
		{"call neither ran nor waits", reseal(t, good, calls(func(c []any) { delete(c[0].(map[string]any), "approval") })), "either a result or an approval request"},
		{"bad approval id", reseal(t, good, calls(func(c []any) { c[0].(map[string]any)["approval"] = "a b" })), "not a request id"},
		{"unnamed call", reseal(t, good, calls(func(c []any) { c[0].(map[string]any)["name"] = "" })), "name of 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := agent.ParseRunState(tc.doc)
			if !errors.Is(err, agent.ErrBadRunState) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseRunState = %v, %v; want an ErrBadRunState saying %q", st, err, tc.want)
			}
			var into agent.RunState
			if err := json.Unmarshal(tc.doc, &into); err == nil {
				t.Error("json.Unmarshal accepted it")
			}
		})
	}
}

// A saved run read back and saved again is the same document.
func TestRunStateRoundTrip(t *testing.T) {
	good := savedRun(t)
	var st agent.RunState
	if err := json.Unmarshal(good, &st); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(good, again) {
		t.Errorf("round trip changed the document:\n%s\n%s", good, again)
	}
}

// FuzzParseRunState: whatever the bytes, ParseRunState returns without
// panicking, refuses with ErrBadRunState, and what it accepts saves
// again to a document it reads back the same.
func FuzzParseRunState(f *testing.F) {
	good := savedRun(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"format":"clawtool.agent.run","version":1,"sha256":"","run":{}}`))
	f.Add(reseal(f, good, func(r map[string]any) { r["loaded"] = []any{"x"} }))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := agent.ParseRunState(b)
		if err != nil {
			if !errors.Is(err, agent.ErrBadRunState) {
				t.Fatalf("error not wrapping ErrBadRunState: %v", err)
			}
			return
		}
		doc, err := st.MarshalJSON()
		if err != nil {
			t.Fatalf("an accepted state does not save: %v", err)
		}
		st2, err := agent.ParseRunState(doc)
		if err != nil {
			t.Fatalf("a saved state is refused: %v", err)
		}
		doc2, _ := st2.MarshalJSON()
		if !bytes.Equal(doc, doc2) {
			t.Fatalf("not stable:\n%s\n%s", doc, doc2)
		}
	})
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
