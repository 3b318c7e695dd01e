package oauth

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds of [ParseChallenges].
const (
	// MaxChallengeBytes bounds the WWW-Authenticate field values read,
	// all lines together.
	MaxChallengeBytes = 8 << 10
	maxChallenges     = 16
	maxParams         = 32
)

// A Challenge is one challenge of a WWW-Authenticate field (RFC 9110
// §11.6.1): an authentication scheme and its parameters, or its token68.
type Challenge struct {
	// Scheme is the authentication scheme, in lower case ("bearer").
	Scheme string
	// Params are the auth-params by lower-case name, quoted strings
	// unquoted. A name occurs once at most.
	Params map[string]string
	// Token68 is the challenge's token68 form, when it has one instead
	// of parameters.
	Token68 string
}

// ParseChallenges parses the values of WWW-Authenticate fields, each of
// which may hold several challenges separated by commas. It refuses
// input longer than [MaxChallengeBytes], more than 16 challenges, more
// than 32 parameters in one, a parameter named twice in one challenge,
// and anything that is not the RFC 9110 grammar, with an error that
// says where; it never returns part of a malformed field.
func ParseChallenges(values []string) ([]Challenge, error) {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	if n > MaxChallengeBytes {
		return nil, fmt.Errorf("oauth: WWW-Authenticate is longer than %d bytes", MaxChallengeBytes)
	}
	var out []Challenge
	for _, v := range values {
		p := challengeParser{s: v}
		cs, err := p.parse()
		if err != nil {
			return nil, fmt.Errorf("oauth: malformed WWW-Authenticate: %w", err)
		}
		out = append(out, cs...)
		if len(out) > maxChallenges {
			return nil, fmt.Errorf("oauth: WWW-Authenticate holds more than %d challenges", maxChallenges)
		}
	}
	return out, nil
}

// bearer returns the first Bearer challenge of cs, or nil.
func bearer(cs []Challenge) *Challenge {
	for i := range cs {
		if cs[i].Scheme == "bearer" {
			return &cs[i]
		}
	}
	return nil
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) parse() ([]Challenge, error) {
	var out []Challenge
	for {
		p.skipListSeparators()
		if p.i >= len(p.s) {
			return out, nil
		}
		scheme := p.token()
		if scheme == "" {
			return nil, p.errorf("expected an authentication scheme")
		}
		c := Challenge{Scheme: strings.ToLower(scheme)}
		if len(out) == maxChallenges {
			return nil, fmt.Errorf("more than %d challenges", maxChallenges)
		}
		if err := p.challengeBody(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

// challengeBody reads what follows a scheme: nothing, a token68, or a
// comma-separated list of auth-params, up to the next challenge.
func (p *challengeParser) challengeBody(c *Challenge) error {
	if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != '\t' && p.s[p.i] != ',' {
		return p.errorf("expected a space after the scheme")
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] == ',' {
		return nil
	}
	if t := p.token68(); t != "" {
		c.Token68 = t
		return nil
	}
	for {
		start := p.i
		name := p.token()
		if name == "" {
			return p.errorf("expected a parameter name")
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			// Not a parameter: the scheme of the next challenge.
			if c.Params == nil {
				return p.errorf("expected '=' after %q", name)
			}
			p.i = start
			return nil
		}
		p.i++
		p.skipSpace()
		value, err := p.value()
		if err != nil {
			return err
		}
		key := strings.ToLower(name)
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		if _, dup := c.Params[key]; dup {
			return fmt.Errorf("parameter %q occurs twice in one challenge", key)
		}
		if len(c.Params) == maxParams {
			return fmt.Errorf("more than %d parameters in one challenge", maxParams)
		}
		c.Params[key] = value
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil
		}
		if p.s[p.i] != ',' {
			return p.errorf("expected ',' after the value of %q", key)
		}
		p.skipListSeparators()
		if p.i >= len(p.s) {
			return nil
		}
	}
}

// token68 reads a token68 that stands alone (followed by the end of
// the field or a comma), or reads nothing: "realm=x" is a parameter,
// "abc==" a token68.
func (p *challengeParser) token68() string {
	j := p.i
	for j < len(p.s) && isToken68(p.s[j]) {
		j++
	}
	if j == p.i {
		return ""
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	end := j
	for end < len(p.s) && (p.s[end] == ' ' || p.s[end] == '\t') {
		end++
	}
	if end < len(p.s) && p.s[end] != ',' {
		return ""
	}
	t := p.s[p.i:j]
	p.i = j
	return t
}

func (p *challengeParser) value() (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		return p.quoted()
	}
	v := p.token()
	if v == "" {
		return "", p.errorf("expected a token or a quoted string")
	}
	return v, nil
}

func (p *challengeParser) quoted() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) || !isQuotedPairChar(p.s[p.i+1]) {
				return "", p.errorf("bad escape in a quoted string")
			}
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		case c == '\t' || c >= 0x20 && c != 0x7f:
			b.WriteByte(c)
			p.i++
		default:
			return "", p.errorf("control character in a quoted string")
		}
	}
	return "", errors.New("unterminated quoted string")
}

func (p *challengeParser) token() string {
	j := p.i
	for j < len(p.s) && isTchar(p.s[j]) {
		j++
	}
	t := p.s[p.i:j]
	p.i = j
	return t
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipListSeparators skips spaces and the empty list elements RFC 9110
// §5.6.1 tells recipients to accept.
func (p *challengeParser) skipListSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *challengeParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68 reports whether c may appear in a token68 before its '='s.
func isToken68(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

func isQuotedPairChar(c byte) bool { return c == '\t' || c >= 0x20 && c != 0x7f }
