package oauth_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

func TestParseChallenges(t *testing.T) {
	cases := []struct {
		in   []string
		want []oauth.Challenge
		err  string
	}{
		{[]string{`Bearer resource_metadata="https://x/.well-known/oauth-protected-resource", scope="a b"`},
			[]oauth.Challenge{{Scheme: "bearer", Params: map[string]string{"resource_metadata": "https://x/.well-known/oauth-protected-resource", "scope": "a b"}}}, ""},
		{[]string{`Bearer error="insufficient_scope",scope=files_write , error_description="say \"please\""`},
			[]oauth.Challenge{{Scheme: "bearer", Params: map[string]string{"error": "insufficient_scope", "scope": "files_write", "error_description": `say "please"`}}}, ""},
		{[]string{`Basic realm="x", Bearer realm="y"`},
			[]oauth.Challenge{{Scheme: "basic", Params: map[string]string{"realm": "x"}}, {Scheme: "bearer", Params: map[string]string{"realm": "y"}}}, ""},
		{[]string{`Basic abc==, BEARER`, `Bearer  SCOPE = "s"`},
			[]oauth.Challenge{{Scheme: "basic", Token68: "abc=="}, {Scheme: "bearer"}, {Scheme: "bearer", Params: map[string]string{"scope": "s"}}}, ""},
		{[]string{`, ,Bearer`}, []oauth.Challenge{{Scheme: "bearer"}}, ""},
		{[]string{""}, nil, ""},
		{[]string{`Bearer scope="a", scope="b"`}, nil, "occurs twice"},
		{[]string{`Bearer scope="unterminated`}, nil, "unterminated"},
		{[]string{`Bearer scope="bad \` + "\x01" + `"`}, nil, "escape"},
		{[]string{`Bearer scope="a` + "\n" + `"`}, nil, "control character"},
		{[]string{`Bearer a b`}, nil, "expected '='"},
		{[]string{`Bearer scope=`}, []oauth.Challenge{{Scheme: "bearer", Token68: "scope="}}, ""},
		{[]string{`Bearer scope="a" x`}, nil, "expected ','"},
		{[]string{`"Bearer"`}, nil, "expected an authentication scheme"},
		{[]string{strings.Repeat("x", oauth.MaxChallengeBytes+1)}, nil, "longer than"},
		{[]string{strings.Repeat("Bearer, ", 17)}, nil, "more than 16 challenges"},
		{[]string{"Bearer " + manyParams(33)}, nil, "more than 32 parameters"},
	}
	for _, c := range cases {
		got, err := oauth.ParseChallenges(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseChallenges(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("ParseChallenges(%q): %v", c.in, err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("ParseChallenges(%q) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

// FuzzParseChallenges: any input is parsed or refused, never a panic,
// and what is parsed is within the bounds and re-parses to itself.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://x/y", scope="a b"`,
		`Bearer error="insufficient_scope", scope="w", error_description="d"`,
		`Basic realm="x", Bearer`, `Negotiate abc==`, `Bearer a=b,,c="d\"e"`, `,`, `"`, `Bearer scope="`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := oauth.ParseChallenges([]string{s})
		if err != nil {
			return
		}
		if len(cs) > 16 {
			t.Fatalf("%d challenges", len(cs))
		}
		var b strings.Builder
		for i, c := range cs {
			if c.Scheme == "" || len(c.Params) > 32 {
				t.Fatalf("challenge %+v", c)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.Scheme)
			if c.Token68 != "" {
				b.WriteString(" " + c.Token68)
			}
			first := true
			for k, v := range c.Params {
				if first {
					b.WriteString(" ")
				} else {
					b.WriteString(", ")
				}
				first = false
				b.WriteString(k + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`)
			}
		}
		again, err := oauth.ParseChallenges([]string{b.String()})
		if err != nil && len(b.String()) <= oauth.MaxChallengeBytes {
			t.Fatalf("%q parsed to %+v, whose rendering %q does not parse: %v", s, cs, b.String(), err)
		}
		if err == nil && !reflect.DeepEqual(again, cs) {
			t.Fatalf("%q parsed to %+v, and again to %+v", s, cs, again)
		}
	})
}

func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("p" + strings.Repeat("x", i) + "=v")
	}
	return b.String()
}
