package bearer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestTokenDatesBounded: a token's exp, nbf or iat beyond what a time
// holds. golang-jwt turns the seconds into an int64 with Go's float
// conversion, whose result past 2^63 depends on the processor: on amd64
// an nbf of 1e19 (a start in the year 3e11) became the smallest int64, a
// start in the distant past, and the token was accepted now (the attack
// rows before the fix, on amd64); elsewhere an exp of 1e19 may become
// the distant future. A date must now be a number from 0 to
// 253402300799 (the end of year 9999); the controls are dates in range,
// fractions and the largest accepted.
func TestTokenDatesBounded(t *testing.T) {
	v := verifier()
	now := time.Now().Unix()
	claims := func(dates string) string {
		return fmt.Sprintf(`{"iss":"https://issuer.test","aud":"clawtool","sub":"carol",%s}`, dates)
	}
	for _, tc := range []struct {
		name, dates string
		ok          bool
	}{
		{"control: exp in an hour", fmt.Sprintf(`"exp":%d`, now+3600), true},
		{"control: a fraction of a second", fmt.Sprintf(`"exp":%d.5,"nbf":%d.25,"iat":%d.75`, now+3600, now-60, now-60), true},
		{"control: the end of year 9999", `"exp":253402300799`, true},
		{"control: nbf in an hour is not yet valid", fmt.Sprintf(`"exp":%d,"nbf":%d`, now+7200, now+3600), false},
		{"attack: nbf of 1e19", fmt.Sprintf(`"exp":%d,"nbf":1e19`, now+3600), false},
		{"attack: nbf of 2^63", fmt.Sprintf(`"exp":%d,"nbf":9223372036854775808`, now+3600), false},
		{"attack: exp of 1e19", `"exp":1e19`, false},
		{"attack: exp past year 9999", `"exp":253402300800`, false},
		{"attack: iat of 1e300", fmt.Sprintf(`"exp":%d,"iat":1e300`, now+3600), false},
		{"attack: a negative nbf", fmt.Sprintf(`"exp":%d,"nbf":-1e19`, now+3600), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.VerifyToken(context.Background(), signRaw(t, `{"alg":"HS256"}`, claims(tc.dates)))
			if tc.ok {
				if err != nil || p.ID != "carol" {
					t.Fatalf("VerifyToken = %+v, %v; want carol", p, err)
				}
				return
			}
			if !errors.Is(err, bearer.ErrInvalidToken) {
				t.Fatalf("VerifyToken = %+v, %v; want the token refused", p, err)
			}
		})
	}
}
