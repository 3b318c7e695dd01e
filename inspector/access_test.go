package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

type asKey struct{}

// onlyAlice allows the calls made as alice.
type onlyAlice struct{}

func (onlyAlice) Authorize(ctx context.Context, req tool.AccessRequest) error {
	if id, _ := ctx.Value(asKey{}).(string); id != "alice" {
		return errors.New("only alice may call " + req.Name)
	}
	return nil
}

func newAccessHandler(t *testing.T, auditLog string) *Handler {
	r := tool.NewRegistry(tool.WithAuthorizer(onlyAlice{}))
	r.Register(&rawTool{name: "echo", desc: "Echoes.", schema: `{"type":"object"}`,
		fn: func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "echoed"}, nil
		}})
	return New(r, WithToken(testToken),
		WithCallAs(func(ctx context.Context, id string, roles []string) (context.Context, error) {
			if id == "nobody" {
				return nil, errors.New("nobody is not a user")
			}
			return context.WithValue(ctx, asKey{}, id), nil
		}),
		WithAuditLog(func() (io.ReadSeekCloser, error) { return os.Open(auditLog) }))
}

func TestCallAs(t *testing.T) {
	h := newAccessHandler(t, filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		name, body string
		code       int
		want       string // in the body
		kind       string // of the result event, for 200
	}{
		{"allowed", `{"name":"echo","as":{"id":"alice","roles":["admin"]}}`, 200, "echoed", ""},
		{"denied with message", `{"name":"echo","as":{"id":"bob"}}`, 200, "only alice may call echo", "denied"},
		{"anonymous denied", `{"name":"echo"}`, 200, "only alice", "denied"},
		{"empty id", `{"name":"echo","as":{"roles":["admin"]}}`, 400, `needs \"id\"`, ""},
		{"empty role", `{"name":"echo","as":{"id":"alice","roles":[""]}}`, 400, "role is empty", ""},
		{"long id", `{"name":"echo","as":{"id":"` + strings.Repeat("a", 300) + `"}}`, 400, "longer than", ""},
		{"refused by the host", `{"name":"echo","as":{"id":"nobody"}}`, 400, "nobody is not a user", ""},
		{"unknown field", `{"name":"echo","as":{"id":"alice","admin":true}}`, 400, "unknown field", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, "POST", "/api/call", tt.body, apiHeaders)
			if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) {
				t.Fatalf("%d %s, want %d with %q", w.Code, w.Body.String(), tt.code, tt.want)
			}
			if w.Code == 200 {
				evs := readEvents(t, w.Body.String())
				if got, _ := evs[len(evs)-1].data["kind"].(string); got != tt.kind {
					t.Errorf("kind %q, want %q", got, tt.kind)
				}
			}
		})
	}
	plain := newTestHandler(t)
	if w := do(plain, "POST", "/api/call", `{"name":"order","as":{"id":"alice"}}`, apiHeaders); w.Code != 400 || !strings.Contains(w.Body.String(), "needs a policy") {
		t.Errorf("as without WithCallAs: %d %s", w.Code, w.Body.String())
	}
	if w := do(plain, "GET", "/api/access", "", apiHeaders); w.Body.String() != "{\"approvals\":false,\"audit\":false,\"call_as\":false,\"sources\":false}\n" {
		t.Errorf("access without options: %s", w.Body.String())
	}
	if w := do(h, "GET", "/api/access", "", apiHeaders); w.Body.String() != "{\"approvals\":false,\"audit\":true,\"call_as\":true,\"sources\":false}\n" {
		t.Errorf("access with options: %s", w.Body.String())
	}
}

func TestAudit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	lines := []string{
		`{"seq":1,"event":"decision","principal":"alice","tool":"echo","effect":"allow"}`,
		`{"seq":2,"event":"outcome","principal":"alice","tool":"echo","outcome":"ok"}`,
		`not a record`,
		`{"seq":3,"event":"decision","principal":"bob","tool":"echo","effect":"deny","reason":"no"}`,
		`{"seq":4,"event":"decision","principal":"bob","tool":"kv","effect":"ask"}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newAccessHandler(t, file)
	tests := []struct {
		query   string
		code    int
		seqs    []float64 // newest first
		matched int
	}{
		{"", 200, []float64{4, 3, 2, 1}, 4},
		{"?principal=bob", 200, []float64{4, 3}, 2},
		{"?principal=bob&tool=echo", 200, []float64{3}, 1},
		{"?effect=allow", 200, []float64{1}, 1},
		{"?limit=2", 200, []float64{4, 3}, 4},
		{"?limit=0", 400, nil, 0},
		{"?limit=x", 400, nil, 0},
		{"?limit=1001", 400, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			w := do(h, "GET", "/api/audit"+tt.query, "", apiHeaders)
			if w.Code != tt.code {
				t.Fatalf("%d %s, want %d", w.Code, w.Body.String(), tt.code)
			}
			if tt.code != 200 {
				return
			}
			var got struct {
				Records []map[string]any
				Matched int
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			var seqs []float64
			for _, r := range got.Records {
				seqs = append(seqs, r["seq"].(float64))
			}
			if !slices.Equal(seqs, tt.seqs) || got.Matched != tt.matched {
				t.Errorf("seqs %v matched %d, want %v %d", seqs, got.Matched, tt.seqs, tt.matched)
			}
		})
	}
	if w := do(newTestHandler(t), "GET", "/api/audit", "", apiHeaders); w.Code != 404 {
		t.Errorf("audit without WithAuditLog: %d", w.Code)
	}
	if w := do(newAccessHandler(t, filepath.Join(t.TempDir(), "gone")), "GET", "/api/audit", "", apiHeaders); w.Code != 500 || !strings.Contains(w.Body.String(), "opening the audit log") {
		t.Errorf("missing audit log: %d %s", w.Code, w.Body.String())
	}
}
