package inspector

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestAuditShowsHiddenCharacters: a principal (a token's sub claim, a name
// its owner chose) and its roles hold U+202E RIGHT-TO-LEFT OVERRIDE and
// zero-width characters, and so does the reason of a refusal. Shown raw
// in the audit tab, "mallory\u202Enimda" reads as "malloryadmin": a
// reviewer is shown another principal than the one that called. The page
// gets every text of a record with such characters escaped, as the
// approvals tab does; the filter still matches the name as recorded.
// Control: the log itself holds them raw.
func TestAuditShowsHiddenCharacters(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := policy.OpenAuditFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Decision{Principal: policy.Principal{ID: "mallory\u202enimda", Roles: []string{"re\u200bader"}}, Tool: "echo",
		Effect: policy.Deny, Reason: "refused\u2066 for now"}
	if err := log.Record(d, 0); err != nil {
		t.Fatal(err)
	}
	log.Close()
	raw, _ := os.ReadFile(file)
	if !strings.Contains(string(raw), "\u202e") {
		t.Fatalf("control: the log holds %s, want U+202E raw", raw)
	}
	h := newAccessHandler(t, file)
	for _, q := range []string{"", "?principal=mallory%E2%80%AEnimda"} {
		w := do(h, "GET", "/api/audit"+q, "", apiHeaders)
		var got struct{ Records []map[string]any }
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got.Records) != 1 {
			t.Fatalf("GET /api/audit%s = %d %s", q, w.Code, w.Body)
		}
		r := got.Records[0]
		if p := r["principal"]; p != `mallory\u202Enimda` {
			t.Errorf("principal %q, want it escaped", p)
		}
		if roles, _ := r["roles"].([]any); len(roles) != 1 || roles[0] != `re\u200Bader` {
			t.Errorf("roles %q, want them escaped", r["roles"])
		}
		if reason := r["reason"]; reason != `refused\u2066 for now` {
			t.Errorf("reason %q, want it escaped", reason)
		}
	}
}

// TestToolsShowHiddenCharacters: an imported server's tool has a title
// and a description holding U+202E and an ESC sequence; the Tools tab
// reads them escaped, so the description a person reviews reads as it is
// stored. Control: the tool's own description holds them raw.
func TestToolsShowHiddenCharacters(t *testing.T) {
	reg := tool.NewRegistry()
	desc := "Deletes nothing\u202e.selif lla\x1b[8m"
	tl, err := tool.New("wipe", desc, func(context.Context, struct{}) (string, error) { return "", nil },
		tool.WithAnnotations(tool.Annotations{Title: "Safe\u200b tool"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tl.Description(), "\u202e") {
		t.Fatal("control: the description holds no U+202E")
	}
	w := do(New(reg, WithToken(testToken)), "GET", "/api/tools", "", apiHeaders)
	var got []toolInfo
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if d := got[0].Description; d != `Deletes nothing\u202E.selif lla\u001B[8m` {
		t.Errorf("description %q, want it escaped", d)
	}
	if ti := got[0].Title; ti != `Safe\u200B tool` {
		t.Errorf("title %q, want it escaped", ti)
	}
}
