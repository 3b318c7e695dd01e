package gen

import (
	"go/ast"
	"go/doc/comment"
	"go/token"
	"go/types"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A docLine is one line of a doc comment without its comment markers, and
// the line of the source file it is on.
type docLine struct {
	text string
	line int
}

// docLines returns the lines of g without directives (such as
// //clawtool:tool), with the first space after // removed as
// go/ast.CommentGroup.Text does, and trailing white space trimmed.
func docLines(fset *token.FileSet, g *ast.CommentGroup) []docLine {
	if g == nil {
		return nil
	}
	var out []docLine
	for _, c := range g.List {
		line := fset.Position(c.Pos()).Line
		switch {
		case strings.HasPrefix(c.Text, "//"):
			t := c.Text[2:]
			if isDirective(t) {
				continue
			}
			t = strings.TrimPrefix(t, " ")
			out = append(out, docLine{strings.TrimRightFunc(t, unicode.IsSpace), line})
		case strings.HasPrefix(c.Text, "/*"):
			for i, t := range strings.Split(strings.TrimSuffix(c.Text[2:], "*/"), "\n") {
				out = append(out, docLine{strings.TrimRightFunc(t, unicode.IsSpace), line + i})
			}
		}
	}
	return out
}

// isDirective reports whether the text after // is a directive, by the rule
// of go/ast: //line, //extern, //export, or //word:word with no space.
func isDirective(t string) bool {
	if strings.HasPrefix(t, "line ") || strings.HasPrefix(t, "extern ") || strings.HasPrefix(t, "export ") {
		return true
	}
	colon := strings.Index(t, ":")
	if colon <= 0 || colon+1 >= len(t) {
		return false
	}
	for i := 0; i <= colon+1; i++ {
		if i == colon {
			continue
		}
		b := t[i]
		if !('a' <= b && b <= 'z' || '0' <= b && b <= '9') {
			return false
		}
	}
	return true
}

// docText returns the doc comment g as plain text for a description:
// directives dropped, paragraphs reflowed onto one line each and separated
// by a blank line, lists and code kept as go doc prints them, and doc links
// to the package's own names ([Unit], [Report.City]) and to other
// packages ([time.Duration]) written without their brackets.
func docText(g *ast.CommentGroup, scope *types.Scope) string {
	if g == nil {
		return ""
	}
	text := g.Text()
	if strings.TrimSpace(text) == "" {
		return ""
	}
	p := comment.Parser{
		LookupSym: func(recv, name string) bool {
			if recv != "" {
				name = recv
			}
			return scope != nil && scope.Lookup(name) != nil
		},
	}
	pr := comment.Printer{TextWidth: -1}
	return strings.TrimSpace(string(pr.Text(p.Parse(text))))
}

// A funcDoc is what the doc comment of a //clawtool:tool function says.
type funcDoc struct {
	summary string // the first paragraph, its lines joined by spaces
	params  []paramDoc
}

// description turns the first paragraph of a tool function's doc comment
// into the tool's description, a sentence for a model, which knows the
// tool by its tool name and not by the Go function's name: Go's
// convention of starting with the function's name ("GetWeather reports
// the current weather in a city.") is dropped, with an "is" after it
// ("Ping is a no-op." gives "A no-op."), and the next word capitalised
// ("Reports the current weather in a city."); a period is added when the
// paragraph ends without one (or "!" or "?"). A paragraph that is the
// function's name alone is kept as written.
func description(funcName, summary string) string {
	if rest, ok := strings.CutPrefix(summary, funcName+" "); ok {
		rest = strings.TrimSpace(rest)
		if after, ok := strings.CutPrefix(rest+" ", "is "); ok {
			rest = strings.TrimSpace(after)
		}
		if rest != "" {
			r, size := utf8.DecodeRuneInString(rest)
			summary = string(unicode.ToUpper(r)) + rest[size:]
		}
	}
	if summary != "" && !strings.ContainsAny(summary[len(summary)-1:], ".!?") {
		summary += "."
	}
	return summary
}

// A paramDoc is one entry of a doc comment's parameter list.
type paramDoc struct {
	name     string // as written: a Go parameter name or its snake_case form
	text     string // the entry's text, continuation lines joined by spaces
	line     int
	def      string // the text X of "(default: X)", when hasDef
	hasDef   bool
	optional bool // the text says "(optional)"
}

// A lineError is a problem at a line of the file being read.
type lineError struct {
	line int
	msg  string
}

// paramHeaders are the lines that open a parameter list, compared without
// case: the Go-style "Parameters:" and the Google-style "Args:".
var paramHeaders = []string{"parameters:", "params:", "args:", "arguments:"}

// entryRE matches a parameter list entry: an optional bullet ("-", "*",
// "+" or "1."), a name, an optional parenthesised type, a colon, and the
// description.
var entryRE = regexp.MustCompile(`^(?:[-*+•]\s+|\d+[.)]\s+)?([\pL_][\pL\pN_]*)(?:\s*\([^)]*\))?\s*:(?:\s+(.*))?$`)

func isParamHeader(t string) bool {
	if t == "" || t[0] == ' ' || t[0] == '\t' {
		return false
	}
	for _, h := range paramHeaders {
		if strings.EqualFold(strings.TrimSpace(t), h) {
			return true
		}
	}
	return false
}

// indentWidth returns the width of t's leading white space, with tab stops
// every 4 columns, so that gofmt's tab-indented form of an indented block
// and the space-indented form it came from measure alike.
func indentWidth(t string) int {
	w := 0
	for _, r := range t {
		switch r {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// parseFuncDoc reads a tool function's doc comment: its first paragraph and
// its parameter lists. The grammar is in docs/tools.md ("Describing tools with
// doc comments").
func parseFuncDoc(lines []docLine) (funcDoc, []lineError) {
	var (
		d    funcDoc
		errs []lineError
	)
	i := 0
	for i < len(lines) && lines[i].text == "" {
		i++
	}
	var summary []string
	for ; i < len(lines) && lines[i].text != "" && !isParamHeader(lines[i].text); i++ {
		summary = append(summary, strings.TrimSpace(lines[i].text))
	}
	d.summary = strings.Join(summary, " ")

	for ; i < len(lines); i++ {
		if !isParamHeader(lines[i].text) {
			continue
		}
		var (
			entryIndent = -1
			cur         *paramDoc
		)
		for i++; i < len(lines); i++ {
			t := lines[i].text
			body := strings.TrimSpace(t)
			if body == "" {
				continue
			}
			ind := indentWidth(t)
			if ind == 0 {
				i-- // the list has ended; look at this line again
				break
			}
			if m := entryRE.FindStringSubmatch(body); m != nil && (entryIndent < 0 || ind <= entryIndent) {
				if entryIndent < 0 {
					entryIndent = ind
				}
				d.params = append(d.params, paramDoc{name: m[1], text: m[2], line: lines[i].line})
				cur = &d.params[len(d.params)-1]
				continue
			}
			if cur == nil {
				errs = append(errs, lineError{lines[i].line, `parameter list entry must look like "name: description"`})
				continue
			}
			cur.text = strings.TrimSpace(cur.text + " " + body)
		}
	}

	for k := range d.params {
		p := &d.params[k]
		p.optional = indexASCIIFold(p.text, "(optional)") >= 0
		def, ok, err := findDefault(p.text)
		if err != "" {
			errs = append(errs, lineError{p.line, "parameter " + p.name + ": " + err})
			continue
		}
		p.def, p.hasDef = def, ok
	}
	return d, errs
}

// findDefault returns X from the first "(default: X)" in text, matched
// without ASCII case. X ends at the first ")" outside quotes and brackets,
// so JSON values such as ["a", "b"] or "a)b" may be written as they are.
func findDefault(text string) (value string, ok bool, errMsg string) {
	const marker = "(default:"
	at := indexASCIIFold(text, marker)
	if at < 0 {
		return "", false, ""
	}
	rest := text[at+len(marker):]
	depth := 0
	inString := false
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ')':
			if depth == 0 {
				v := strings.TrimSpace(rest[:i])
				if v == "" {
					return "", false, "empty (default: ) value"
				}
				return v, true, ""
			}
			depth--
		}
	}
	return "", false, `"(default:" has no closing ")"`
}

// indexASCIIFold returns the index of the first instance of marker, which
// is ASCII, in s, comparing ASCII letters without case, or -1. Unlike
// strings.ToLower, it keeps s's byte offsets (the lower case of some
// characters is longer or shorter than they are), and unlike Unicode
// folding it does not read the Kelvin sign as a k.
func indexASCIIFold(s, marker string) int {
	for i := 0; i+len(marker) <= len(s); i++ {
		k := 0
		for k < len(marker) && lowerASCII(s[i+k]) == lowerASCII(marker[k]) {
			k++
		}
		if k == len(marker) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
