package policy_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

func TestHeadersRoundTrip(t *testing.T) {
	want := policy.Principal{ID: "alice", Roles: []string{"admin", "ops"}, Attrs: map[string]any{"tenant": "acme", "level": json.Number("3")}}
	h := policy.Headers(policy.WithPrincipal(context.Background(), want))
	if len(h[policy.HeaderPrincipal]) != 1 {
		t.Fatalf("headers %v: want one %s", h, policy.HeaderPrincipal)
	}
	ctx, err := policy.FromHeaders(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := policy.PrincipalFrom(ctx)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("restored %+v (%v), want %+v", got, ok, want)
	}
	if h := policy.Headers(context.Background()); h != nil {
		t.Errorf("no principal: headers %v, want nil", h)
	}
}

func TestFromHeadersBadInput(t *testing.T) {
	carried := policy.WithPrincipal(context.Background(), policy.Principal{ID: "worker"})
	tests := []struct {
		name    string
		h       map[string][]string
		wantErr string // "" when ctx must come back unchanged
	}{
		{"absent", map[string][]string{"Other": {"x"}}, ""},
		{"nil", nil, ""},
		{"repeated", map[string][]string{policy.HeaderPrincipal: {`{"id":"a"}`, `{"id":"b"}`}}, "given 2 times"},
		{"not json", map[string][]string{policy.HeaderPrincipal: {`alice`}}, "invalid character"},
		{"empty id", map[string][]string{policy.HeaderPrincipal: {`{"roles":["admin"]}`}}, `"id" is empty`},
		{"unknown field", map[string][]string{policy.HeaderPrincipal: {`{"id":"a","admin":true}`}}, "unknown field"},
		{"trailing", map[string][]string{policy.HeaderPrincipal: {`{"id":"a"} {"id":"b"}`}}, "data after"},
		{"too long", map[string][]string{policy.HeaderPrincipal: {`{"id":"` + strings.Repeat("a", policy.MaxPrincipalHeader) + `"}`}}, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, err := policy.FromHeaders(carried, tt.h)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if p, _ := policy.PrincipalFrom(ctx); p.ID != "worker" {
				t.Errorf("principal %q, want the context's own (worker)", p.ID)
			}
		})
	}
}
