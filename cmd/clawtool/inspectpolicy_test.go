package main

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/inspector"
)

// TestInspectorCallAs runs calls from the inspector as chosen principals
// under --policy, and reads the decisions back from --audit.
func TestInspectorCallAs(t *testing.T) {
	pf := &policyFlags{file: filepath.Join("testdata", "policy", "roles.cedar"), audit: filepath.Join(t.TempDir(), "audit.jsonl"), rolesIn: "operator:analyst"}
	opts, err := pf.options()
	if err != nil {
		t.Fatal(err)
	}
	r := tool.NewRegistry(opts...)
	if err := registerBuiltins(r); err != nil {
		t.Fatal(err)
	}
	h := newInspector(r, pf.inspectorOptions()...)
	do := func(method, target, body string) string {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Host = "127.0.0.1:1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(inspector.TokenHeader, h.Token())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Body.String()
	}
	tests := []struct {
		name, body string
		want       []string
	}{
		{"allowed", `{"name":"calc","args":{"expression":"6*7"},"as":{"id":"bob","roles":["analyst"]}}`, []string{`"output":"42"`}},
		{"denied", `{"name":"calc","args":{"expression":"6*7"},"as":{"id":"eve"}}`, []string{`"kind":"denied"`, "no permission covers this call"}},
		{"ask", `{"name":"kv","args":{"op":"delete","key":"a"},"as":{"id":"ann","roles":["operator"]}}`, []string{`"approval_request"`, `"effect":"ask"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := do("POST", "/api/call", tt.body)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if out := do("GET", "/api/audit?principal=eve", ""); !strings.Contains(out, `"matched":1`) || !strings.Contains(out, `"effect":"deny"`) {
		t.Errorf("audit for eve:\n%s", out)
	}
}
