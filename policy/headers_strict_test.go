package policy_test

import (
	"context"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestFromHeadersReadExactly: a principal header that JSON parsers read
// apart. encoding/json keeps the last of two equal keys (other parsers,
// and a gateway that inspects the header, the first), binds "ID" to the
// id field as well, and reads invalid UTF-8 and lone surrogates as
// U+FFFD (two users become one). FromHeaders read "alice" then "admin"
// as admin before the fix (the attack rows restored a principal); such a
// header is now refused, and the call with it. The controls are the same
// headers without the trick, restored as written.
func TestFromHeadersReadExactly(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		id           string // "": refused
	}{
		{"control: one id", `{"id":"alice","roles":["ops"]}`, "alice"},
		{"control: attributes", `{"id":"alice","attrs":{"org":{"team":"a"}}}`, "alice"},
		{"attack: two ids", `{"id":"alice","id":"admin"}`, ""},
		{"attack: id and ID", `{"id":"alice","ID":"admin"}`, ""},
		{"attack: two roles lists", `{"id":"alice","roles":["ops"],"roles":["admin"]}`, ""},
		{"attack: two equal keys in an attribute", `{"id":"alice","attrs":{"org":{"team":"a","team":"root"}}}`, ""},
		{"attack: a lone surrogate in the id", `{"id":"\ud800lice"}`, ""},
		{"attack: invalid UTF-8 in the id", "{\"id\":\"\xfflice\"}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, err := policy.FromHeaders(context.Background(), map[string][]string{policy.HeaderPrincipal: {tc.header}})
			p, ok := policy.PrincipalFrom(ctx)
			if tc.id == "" {
				if err == nil || ok {
					t.Fatalf("FromHeaders restored %+v, %v; want the header refused", p, err)
				}
				return
			}
			if err != nil || p.ID != tc.id {
				t.Fatalf("FromHeaders = %+v, %v; want %s", p, err, tc.id)
			}
		})
	}
}
