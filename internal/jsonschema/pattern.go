package jsonschema

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/recost"
)

// JSON Schema patterns are ECMA-262 regular expressions; Go's regexp
// package reads RE2 syntax. translatePattern rewrites what schemas written
// for JavaScript (TypeScript MCP servers, zod) use and RE2 reads
// differently or not at all:
//
//   - \uXXXX (a surrogate pair too) and \u{X...} become \x{...};
//   - \cX becomes the control character it names; \0 becomes \x00;
//   - \s and \S become JavaScript's whitespace class and its complement,
//     which include the Unicode spaces (U+00A0, U+2000–U+200A, U+3000,
//     U+FEFF, ...) and vertical tab that RE2's \s (ASCII [\t\n\f\r ])
//     leaves out;
//   - \b inside a class is a backspace; [^] is any character and [] none;
//   - \p{…} and \P{…} with a General_Category or Script (short or long
//     name, or gc=/sc=/General_Category=/Script=) become RE2's \p{…}.
//
// Lookaheads right after a leading ^, as in zod's email pattern
// ^(?!\.)(?!.*\.\.)[...]+@...$, and lookbehinds right before a final $
// are checked as patterns of their own at the start or the end of the
// string, when the rest has no top-level alternation. Other lookaround
// ((?=, (?!, (?<=, (?<!), backreferences (\1, \k<name>) and Unicode
// properties RE2 does not know cannot be expressed and are errors. The other syntax means the same in both (\d, \w and \b are
// ASCII in both; "." does not match "\n" in either, but JavaScript's also
// refuses "\r", U+2028 and U+2029).
func translatePattern(src string) (string, error) {
	if !strings.ContainsAny(src, `\[(`) {
		return src, nil
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '[' && !inClass:
			switch {
			case strings.HasPrefix(src[i:], "[^]"):
				b.WriteString(`[\x{0}-\x{10FFFF}]`)
				i += 3
				continue
			case strings.HasPrefix(src[i:], "[]"):
				b.WriteString(`[^\x{0}-\x{10FFFF}]`)
				i += 2
				continue
			}
			inClass = true
			b.WriteByte('[')
			i++
			if i < len(src) && src[i] == '^' {
				b.WriteByte('^')
				i++
			}
			if i < len(src) && src[i] == ']' { // RE2 reads a leading ] as a member; JavaScript as the end
				b.WriteString(`^\x{0}-\x{10FFFF}]`)
				inClass = false
				i++
			}
			continue
		case c == ']' && inClass:
			inClass = false
		case c == '(' && !inClass && strings.HasPrefix(src[i:], "(?"):
			rest := src[i+2:]
			if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "!") || strings.HasPrefix(rest, "<=") || strings.HasPrefix(rest, "<!") {
				return "", errors.New("lookaround ((?=, (?!, (?<=, (?<!) cannot be expressed in RE2")
			}
		case c == '\\':
			if i+1 >= len(src) {
				return "", errors.New(`the pattern ends with "\"`)
			}
			n, err := translateEscape(&b, src, i, inClass)
			if err != nil {
				return "", err
			}
			i += n
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// JavaScript's \s: WhiteSpace and LineTerminator of ECMA-262.
const (
	jsSpace    = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`
	jsNonSpace = `\x{0}-\x{8}\x{e}-\x{1f}\x{21}-\x{9f}\x{a1}-\x{167f}\x{1681}-\x{1fff}\x{200b}-\x{2027}\x{202a}-\x{202e}\x{2030}-\x{205e}\x{2060}-\x{2fff}\x{3001}-\x{fefe}\x{ff00}-\x{10ffff}`
)

// translateEscape writes the RE2 form of the escape at src[i] and returns
// how many bytes it took.
func translateEscape(b *strings.Builder, src string, i int, inClass bool) (int, error) {
	e := src[i+1]
	switch e {
	case 's', 'S':
		set := jsSpace
		if e == 'S' {
			set = jsNonSpace
		}
		if inClass {
			b.WriteString(set)
		} else {
			b.WriteString("[" + set + "]")
		}
		return 2, nil
	case 'u':
		r, n, ok := unicodeEscape(src[i:])
		if !ok {
			return 0, fmt.Errorf(`malformed escape %s`, quote(shorten(src[i:], 12)))
		}
		fmt.Fprintf(b, `\x{%x}`, r)
		return n, nil
	case 'c':
		if i+2 < len(src) && (src[i+2]|0x20 >= 'a' && src[i+2]|0x20 <= 'z') {
			fmt.Fprintf(b, `\x{%x}`, src[i+2]%32)
			return 3, nil
		}
		return 0, fmt.Errorf(`malformed escape %s: \c takes a letter`, quote(shorten(src[i:], 4)))
	case '0':
		if i+2 < len(src) && src[i+2] >= '0' && src[i+2] <= '9' {
			return 0, errors.New(`octal escapes are not supported`)
		}
		b.WriteString(`\x00`)
		return 2, nil
	case 'b':
		if inClass {
			b.WriteString(`\x08`)
			return 2, nil
		}
	case 'k':
		return 0, errors.New(`backreferences (\k<name>) cannot be expressed in RE2`)
	case 'p', 'P':
		end := strings.IndexByte(src[i:], '}')
		if i+2 >= len(src) || src[i+2] != '{' || end < 0 {
			return 0, fmt.Errorf(`malformed escape %s`, quote(shorten(src[i:], 12)))
		}
		name, err := unicodeProperty(src[i+3 : i+end])
		if err != nil {
			return 0, err
		}
		b.WriteString(`\` + string(e) + "{" + name + "}")
		return end + 1, nil
	case '/':
		b.WriteByte('/')
		return 2, nil
	}
	if e >= '1' && e <= '9' {
		return 0, errors.New(`backreferences (\1 ...) cannot be expressed in RE2`)
	}
	b.WriteString(src[i : i+2])
	return 2, nil
}

// unicodeEscape reads \uXXXX (joining a surrogate pair) or \u{X...} at the
// start of s.
func unicodeEscape(s string) (r rune, n int, ok bool) {
	if strings.HasPrefix(s, `\u{`) {
		end := strings.IndexByte(s, '}')
		if end < 4 || end > 10 {
			return 0, 0, false
		}
		v, err := strconv.ParseUint(s[3:end], 16, 32)
		if err != nil || v > 0x10FFFF {
			return 0, 0, false
		}
		return rune(v), end + 1, true
	}
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 32)
		return rune(v), err == nil
	}
	hi, ok := hex4(s)
	if !ok {
		return 0, 0, false
	}
	if hi >= 0xD800 && hi < 0xDC00 {
		if lo, ok := hex4(s[6:]); ok && lo >= 0xDC00 && lo < 0xE000 {
			return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), 12, true
		}
	}
	return hi, 6, true
}

// generalCategories maps the long names of General_Category values to
// the short ones RE2 reads.
var generalCategories = map[string]string{
	"Letter": "L", "Cased_Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
	"Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn",
	"Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
	"Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc",
	"Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
	"Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
	"Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
	"Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Other": "C",
	"Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
}

// unicodeProperty returns the RE2 name of the property in \p{prop}.
func unicodeProperty(prop string) (string, error) {
	key, val, hasKey := strings.Cut(prop, "=")
	if !hasKey {
		val = prop
	}
	switch key {
	case "General_Category", "gc", "Script", "sc", "Script_Extensions", "scx":
	default:
		if hasKey {
			return "", fmt.Errorf(`Unicode property %s cannot be expressed in RE2`, quote(prop))
		}
	}
	if short, ok := generalCategories[val]; ok {
		val = short
	}
	if _, err := regexp.Compile(`\p{` + val + `}`); err != nil || val == "" {
		return "", fmt.Errorf(`Unicode property %s cannot be expressed in RE2`, quote(prop))
	}
	return val, nil
}

// A pattern is a compiled JSON Schema pattern: an RE2 expression, and the
// lookarounds at its ends as expressions of their own.
type pattern struct {
	src    string
	re     *regexp.Regexp
	cost   reCost
	checks []check
	insts  int // of every program, the checks' too
}

// A check is a lookahead after a leading ^ (re is ^(?:X)) or a lookbehind
// before a final $ (re is (?:X)$); not for a negative one.
type check struct {
	re   *regexp.Regexp
	cost reCost
	not  bool
}

// reCost is what matching one compiled program costs: up to one step per
// instruction for each byte it reads (Go's matcher tracks at most one
// thread per instruction), and it reads at most span bytes of the input
// when bounded (a pattern anchored at the start with a longest match).
type reCost struct {
	insts   int
	span    int
	bounded bool
}

// Bounds on one pattern's program (see recost): a counted repetition
// makes a short pattern a large program, which costs memory to build and
// work per byte to match.
const maxPatternInsts = 1 << 14

// Match reports whether b matches the pattern.
func (p *pattern) Match(b []byte) bool {
	for _, c := range p.checks {
		if c.re.Match(b) == c.not {
			return false
		}
	}
	return p.re.Match(b)
}

// MatchString reports whether s matches the pattern.
func (p *pattern) MatchString(s string) bool {
	for _, c := range p.checks {
		if c.re.MatchString(s) == c.not {
			return false
		}
	}
	return p.re.MatchString(s)
}

// String returns the pattern as the schema has it.
func (p *pattern) String() string { return p.src }

// patternText is a translated pattern, before RE2 compiles it.
type patternText struct {
	core   string
	checks []checkText
}

type checkText struct {
	re  string
	not bool
}

func (t *patternText) size() int {
	n := len(t.core)
	for _, c := range t.checks {
		n += len(c.re)
	}
	return n
}

// translateAll translates src, splitting off the lookarounds at its ends.
func translateAll(src string) (*patternText, error) {
	core, looks := splitLookaround(src)
	t := &patternText{}
	var err error
	if t.core, err = translatePattern(core); err != nil {
		return nil, err
	}
	for _, l := range looks {
		inner, err := translatePattern(l.inner)
		if err != nil {
			return nil, err
		}
		re := "^(?:" + inner + ")"
		if l.behind {
			re = "(?:" + inner + ")$"
		}
		t.checks = append(t.checks, checkText{re: re, not: l.not})
	}
	return t, nil
}

// compile compiles the pattern's programs; it refuses, with errTooLarge
// in the chain, one whose programs hold more than maxPatternInsts
// instructions, before building them.
func (t *patternText) compile(src string) (*pattern, error) {
	p := &pattern{src: src}
	var err error
	if p.cost, err = costRE2(t.core); err != nil {
		return nil, err
	}
	p.insts = p.cost.insts
	costs := make([]reCost, len(t.checks))
	for i, c := range t.checks {
		if costs[i], err = costRE2(c.re); err != nil {
			return nil, err
		}
		p.insts += costs[i].insts
	}
	if p.insts > maxPatternInsts {
		return nil, fmt.Errorf("%w: its program would hold more than %d instructions (a counted repetition such as {1000} repeats what it applies to)", errTooLarge, maxPatternInsts)
	}
	if p.re, err = compileRE2(t.core); err != nil {
		return nil, err
	}
	for i, c := range t.checks {
		re, err := compileRE2(c.re)
		if err != nil {
			return nil, err
		}
		p.checks = append(p.checks, check{re: re, cost: costs[i], not: c.not})
	}
	return p, nil
}

// errTooLarge marks a pattern refused for its size: an error whatever
// Options.StrictPatterns says, since ignoring it would pass what the
// schema did not allow.
var errTooLarge = errors.New("the pattern is too large")

// costRE2 parses RE2 text t as regexp.Compile does and returns what its
// program costs, without building it.
func costRE2(t string) (reCost, error) {
	re, err := syntax.Parse(t, syntax.Perl)
	if err != nil {
		return reCost{}, errors.New(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	c := reCost{insts: recost.Insts(re, maxPatternInsts)}
	c.span, c.bounded = recost.Span(re, maxPatternInsts*utf8.UTFMax)
	return c, nil
}

type lookaround struct {
	inner       string
	behind, not bool
}

// splitLookaround returns src without the lookaheads right after a
// leading ^ and the lookbehinds right before a final $, and those. It
// returns src whole when there are none or when the rest has a top-level
// alternation, which a lookaround at one end does not cover.
func splitLookaround(src string) (string, []lookaround) {
	if !strings.Contains(src, "(?") {
		return src, nil
	}
	spans, alt := topLevelGroups(src)
	var looks []lookaround
	start, end := 0, len(src)
	if strings.HasPrefix(src, "^") {
		start = 1
		for _, sp := range spans {
			if sp[0] != start {
				break
			}
			g := src[sp[0]:sp[1]]
			if !strings.HasPrefix(g, "(?=") && !strings.HasPrefix(g, "(?!") {
				break
			}
			looks = append(looks, lookaround{inner: g[3 : len(g)-1], not: g[2] == '!'})
			start = sp[1]
		}
	}
	if strings.HasSuffix(src, "$") && !strings.HasSuffix(src, `\$`) {
		end = len(src) - 1
		for k := len(spans) - 1; k >= 0; k-- {
			sp := spans[k]
			if sp[1] != end || sp[0] < start {
				break
			}
			g := src[sp[0]:sp[1]]
			if !strings.HasPrefix(g, "(?<=") && !strings.HasPrefix(g, "(?<!") {
				break
			}
			looks = append(looks, lookaround{inner: g[4 : len(g)-1], behind: true, not: g[3] == '!'})
			end = sp[0]
		}
	}
	if len(looks) == 0 || alt {
		return src, nil
	}
	core := src[start:end]
	if start > 0 {
		core = "^" + core
	}
	if end < len(src) {
		core += "$"
	}
	return core, looks
}

// topLevelGroups returns the spans of the top-level groups of src and
// whether it has a top-level alternation. Escapes and classes are skipped.
func topLevelGroups(src string) (spans [][2]int, alt bool) {
	depth, open := 0, 0
	inClass := false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			if depth == 0 {
				open = i
			}
			depth++
		case c == ')':
			if depth > 0 {
				depth--
				if depth == 0 {
					spans = append(spans, [2]int{open, i + 1})
				}
			}
		case c == '|':
			if depth == 0 {
				alt = true
			}
		}
	}
	return spans, alt
}

// compilePattern translates a JSON Schema pattern and compiles it.
func compilePattern(src string) (*pattern, error) {
	t, err := translateAll(src)
	if err != nil {
		return nil, err
	}
	return t.compile(src)
}

// compileRE2 compiles a translated pattern, with a shorter error.
func compileRE2(t string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(t)
	if err != nil {
		msg := err.Error()
		if e, ok := err.(interface{ Unwrap() error }); ok && e.Unwrap() != nil {
			msg = e.Unwrap().Error()
		}
		return nil, errors.New(strings.TrimPrefix(msg, "error parsing regexp: "))
	}
	return re, nil
}
