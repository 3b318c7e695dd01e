package bearer_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/bearer"
)

// signRaw signs the header and payload exactly as written, with HS256
// under hmacKey: a token an encoder of maps could not make.
func signRaw(t *testing.T, header, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	signing := enc([]byte(header)) + "." + enc([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(signing, hmacKey)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + enc(sig)
}

// TestTokenClaimsReadExactly: a signed token whose JSON one parser reads
// one way and another parser another way. encoding/json keeps the last
// of two equal keys (other parsers keep the first), reads a number as a
// float64 (9007199254740993 becomes 9007199254740992, another tenant's
// id, and 1.00000000000000000001 becomes 1) and reads invalid UTF-8 and
// a lone surrogate escape as U+FFFD (two subjects become one). The
// verifier read the claims so, and the policies judged what it read, not
// what the issuer signed: the attack rows were accepted before the fix
// (tenant 9007199254740993 was let into tenant 9007199254740992's tool,
// the second sub won). Each is now refused, or read exactly; the
// controls show the same tokens without the trick accepted as written.
func TestTokenClaimsReadExactly(t *testing.T) {
	a, err := policy.New("tenant.cedar", []byte(`
permit (principal, action, resource == Tool::"ledger")
when { principal has tenant && principal.tenant == 9007199254740992 };
permit (principal == User::"admin", action, resource);`))
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := tool.New("ledger", "Tenant 9007199254740992's ledger.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	if err != nil {
		t.Fatal(err)
	}
	v := verifier()
	const hs = `{"alg":"HS256","typ":"JWT"}`
	exp := time.Now().Add(time.Hour).Unix()
	claims := func(extra string) string {
		return fmt.Sprintf(`{"iss":"https://issuer.test","aud":"clawtool","exp":%d,%s}`, exp, extra)
	}
	for _, tc := range []struct {
		name, header, payload string
		sub                   string        // "": the token is refused
		want                  policy.Effect // the ledger call's decision
	}{
		{"control: the tenant the policy names", hs, claims(`"sub":"carol","tenant":9007199254740992`), "carol", policy.Allow},
		{"control: another tenant, in 53 bits", hs, claims(`"sub":"carol","tenant":9007199254740990`), "carol", policy.Deny},
		{"control: one sub", hs, claims(`"sub":"carol"`), "carol", policy.Deny},
		{"control: a kid", `{"alg":"HS256","kid":""}`, claims(`"sub":"carol"`), "carol", policy.Deny},
		{"attack: a tenant one past 2^53 reads as the one the policy names", hs, claims(`"sub":"carol","tenant":9007199254740993`), "carol", policy.Deny},
		{"attack: 1.00000000000000000001 reads as 1", hs, claims(`"sub":"carol","tenant":9007199254740992.00000000000000000001`), "carol", policy.Deny},
		{"attack: two subs, the last wins", hs, claims(`"sub":"carol","sub":"admin"`), "", ""},
		{"attack: two subs, escaped", hs, claims(`"sub":"carol","s\u0075b":"admin"`), "", ""},
		{"attack: two equal keys in a nested claim", hs, claims(`"sub":"carol","tenant":{"id":1,"id":2}`), "", ""},
		{"attack: two kids in the header", `{"alg":"HS256","kid":"other","kid":""}`, claims(`"sub":"carol"`), "", ""},
		{"attack: two algs in the header", `{"alg":"none","alg":"HS256"}`, claims(`"sub":"carol"`), "", ""},
		{"attack: a lone surrogate in sub reads as U+FFFD", hs, claims(`"sub":"\ud800dmin"`), "", ""},
		{"attack: invalid UTF-8 in sub reads as U+FFFD", hs, claims("\"sub\":\"\xffdmin\""), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.VerifyToken(context.Background(), signRaw(t, tc.header, tc.payload))
			if tc.sub == "" {
				if !errors.Is(err, bearer.ErrInvalidToken) {
					t.Fatalf("VerifyToken = %+v, %v; want the token refused", p, err)
				}
				return
			}
			if err != nil || p.ID != tc.sub {
				t.Fatalf("VerifyToken = %+v, %v; want sub %q", p, err, tc.sub)
			}
			d := a.Decide(policy.WithPrincipal(context.Background(), p), tool.AccessRequest{Name: "ledger", Tool: ledger})
			if d.Effect != tc.want {
				t.Fatalf("ledger call for tenant %v: %s (%s), want %s", p.Attrs["tenant"], d.Effect, d.Reason, tc.want)
			}
		})
	}
}
