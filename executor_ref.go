package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// refKey is the key that marks a reference to another call's output.
var refKey = []byte(`"$output"`)

// A ref is a reference to another call's output inside a call's Args.
type ref struct {
	start, end int    // byte span of the reference object in Args
	at         string // JSON pointer of the reference within Args
	id         string
	pointer    string
	hasPointer bool
}

// refError is a malformed reference.
type refError struct{ v Violation }

func (e refError) Error() string { return e.v.String() }

const refDepth = 64

// findRefs returns the references in args in document order. Malformed
// JSON gives no references and no error: the registry reports it.
func findRefs(args []byte) ([]ref, error) {
	f := refFinder{data: args}
	i, err := f.value(0, 0, "")
	if err != nil {
		if _, ok := err.(refError); ok {
			return nil, err
		}
		return nil, nil
	}
	if jsontext.SkipSpace(args, i) != len(args) {
		return nil, nil
	}
	return f.refs, nil
}

type refFinder struct {
	data []byte
	refs []ref
	buf  []byte
}

func (f *refFinder) value(i, depth int, at string) (int, error) {
	d := f.data
	i = jsontext.SkipSpace(d, i)
	if i >= len(d) {
		return i, jsontext.UnexpectedEnd(i)
	}
	if depth >= refDepth {
		return jsontext.SkipValue(d, i, depth, refDepth)
	}
	switch d[i] {
	case '{':
		return f.object(i, depth, at)
	case '[':
		i = jsontext.SkipSpace(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		for k := 0; ; k++ {
			var err error
			if i, err = f.value(i, depth+1, at+"/"+strconv.Itoa(k)); err != nil {
				return i, err
			}
			i = jsontext.SkipSpace(d, i)
			if i >= len(d) {
				return i, jsontext.UnexpectedEnd(i)
			}
			if d[i] == ']' {
				return i + 1, nil
			}
			if d[i] != ',' {
				return i, jsontext.Unexpected(d, i, "',' or ']'")
			}
			i++
		}
	default:
		return jsontext.SkipValue(d, i, depth, refDepth)
	}
}

// object reads the object at d[i], recording it as a reference when it
// has the key "$output" and looking for references inside it otherwise.
func (f *refFinder) object(start, depth int, at string) (int, error) {
	d := f.data
	type member struct {
		key        string
		valueStart int
	}
	var members []member
	i := jsontext.SkipSpace(d, start+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	isRef := false
	for {
		i = jsontext.SkipSpace(d, i)
		if i >= len(d) || d[i] != '"' {
			return i, jsontext.Unexpected(d, i, "a string key")
		}
		key, next, err := jsontext.ReadString(d, i, f.buf)
		if err != nil {
			return next, err
		}
		k := string(key)
		isRef = isRef || k == "$output"
		i = jsontext.SkipSpace(d, next)
		if i >= len(d) || d[i] != ':' {
			return i, jsontext.Unexpected(d, i, "':'")
		}
		i = jsontext.SkipSpace(d, i+1)
		members = append(members, member{k, i})
		if i, err = jsontext.SkipValue(d, i, depth+1, refDepth); err != nil {
			return i, err
		}
		i = jsontext.SkipSpace(d, i)
		if i >= len(d) {
			return i, jsontext.UnexpectedEnd(i)
		}
		if d[i] == '}' {
			i++
			break
		}
		if d[i] != ',' {
			return i, jsontext.Unexpected(d, i, "',' or '}'")
		}
		i++
	}
	if isRef {
		r := ref{start: start, end: i, at: at}
		ok := true
		for _, m := range members {
			var s string
			if d[m.valueStart] != '"' {
				ok = false
				break
			}
			v, _, err := jsontext.ReadString(d, m.valueStart, nil)
			if err != nil {
				ok = false
				break
			}
			s = string(v)
			switch m.key {
			case "$output":
				r.id = s
			case "pointer":
				r.pointer, r.hasPointer = s, true
			default:
				ok = false
			}
		}
		if !ok || r.id == "" || r.hasPointer && r.pointer != "" && r.pointer[0] != '/' {
			return i, refError{Violation{
				Pointer:  at,
				Expected: `a reference {"$output":"<call ID>"} with an optional "pointer":"/json/pointer" and no other keys ("$output" is reserved for references)`,
				Got:      shorten(string(d[start:i]), 120),
			}}
		}
		f.refs = append(f.refs, r)
		return i, nil
	}
	for _, m := range members {
		if _, err := f.value(m.valueStart, depth+1, at+"/"+escapePointer(m.key)); err != nil {
			return i, err
		}
	}
	return i, nil
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// substitute returns c's arguments with every reference replaced by the
// output it names. The referred calls have all finished.
func substitute(i int, c Call, p *plan, out []Outcome) ([]byte, error) {
	refs := p.refs[i]
	var b bytes.Buffer
	b.Grow(len(c.Args))
	last := 0
	for _, r := range refs {
		v, err := resolve(r, p.calls, p.deps[i], out)
		if err != nil {
			return nil, &ArgumentError{Tool: c.Name, Args: shortenArgs(c.Args), Violations: []Violation{{
				Pointer: r.at, Expected: err.expected, Got: err.got,
			}}}
		}
		b.Write(c.Args[last:r.start])
		b.Write(v)
		last = r.end
	}
	b.Write(c.Args[last:])
	return b.Bytes(), nil
}

type resolveError struct{ expected, got string }

// resolve returns the JSON value r refers to.
func resolve(r ref, calls []Call, deps []int, out []Outcome) ([]byte, *resolveError) {
	j := -1
	for _, k := range deps {
		if calls[k].ID == r.id {
			j = k
			break
		}
	}
	res := out[j].Result
	doc := []byte(res.Structured)
	if len(bytes.TrimSpace(doc)) == 0 {
		if !r.hasPointer {
			return marshalString(res.Output), nil
		}
		doc = []byte(res.Output)
		if !json.Valid(doc) {
			return nil, &resolveError{
				expected: fmt.Sprintf("JSON output from call %q to apply pointer %q to", r.id, r.pointer),
				got:      "text output: " + shorten(res.Output, 80),
			}
		}
	}
	v, err := pointerGet(doc, r.pointer)
	if err != "" {
		return nil, &resolveError{
			expected: fmt.Sprintf("a value at pointer %q in the output of call %q", r.pointer, r.id),
			got:      err,
		}
	}
	return v, nil
}

func marshalString(s string) []byte {
	var b bytes.Buffer
	writeJSONString(&b, s)
	return b.Bytes()
}

// pointerGet returns the value at the JSON pointer ptr in the JSON
// document doc, or a description of why there is none.
func pointerGet(doc []byte, ptr string) ([]byte, string) {
	i := jsontext.SkipSpace(doc, 0)
	rest := ptr
	walked := ""
	for rest != "" {
		rest = rest[1:] // the leading '/'
		tok := rest
		if k := strings.IndexByte(rest, '/'); k >= 0 {
			tok, rest = rest[:k], rest[k:]
		} else {
			rest = ""
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if i >= len(doc) {
			return nil, "no value"
		}
		switch doc[i] {
		case '{':
			next, ok := memberValue(doc, i, tok)
			if !ok {
				return nil, fmt.Sprintf("no member %q at %q", tok, walkedOrRoot(walked))
			}
			i = next
		case '[':
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || strconv.Itoa(n) != tok {
				return nil, fmt.Sprintf("an array at %q, which %q cannot index", walkedOrRoot(walked), tok)
			}
			next, ok := elementValue(doc, i, n)
			if !ok {
				return nil, fmt.Sprintf("an array at %q with no element %d", walkedOrRoot(walked), n)
			}
			i = next
		default:
			return nil, fmt.Sprintf("a %s at %q, which has no members", jsontext.KindName(doc[i]), walkedOrRoot(walked))
		}
		walked += "/" + escapePointer(tok)
	}
	end, err := jsontext.SkipValue(doc, i, 0, 10000)
	if err != nil {
		return nil, "malformed JSON"
	}
	return doc[i:end], ""
}

func walkedOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// memberValue returns the index of the value of member key in the object
// at doc[i].
func memberValue(doc []byte, i int, key string) (int, bool) {
	i = jsontext.SkipSpace(doc, i+1)
	for i < len(doc) && doc[i] == '"' {
		k, next, err := jsontext.ReadString(doc, i, nil)
		if err != nil {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, next)
		if i >= len(doc) || doc[i] != ':' {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, i+1)
		if string(k) == key {
			return i, true
		}
		if i, err = jsontext.SkipValue(doc, i, 0, 10000); err != nil {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
	return 0, false
}

// elementValue returns the index of element n of the array at doc[i].
func elementValue(doc []byte, i, n int) (int, bool) {
	i = jsontext.SkipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return 0, false
	}
	for k := 0; i < len(doc); k++ {
		if k == n {
			return i, true
		}
		var err error
		if i, err = jsontext.SkipValue(doc, i, 0, 10000); err != nil {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return 0, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
	return 0, false
}
