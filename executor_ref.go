package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// refKey is the key that marks a reference to another call's output.
var refKey = []byte(`"$output"`)

// mayHoldRef reports whether args may hold a reference: they hold the
// key as it is, or a \u escape, which could spell it ("\u0024output" is
// the same key once decoded, and must not slip past the reservation).
func mayHoldRef(args []byte) bool {
	return bytes.Contains(args, refKey) || bytes.Contains(args, []byte(`\u`))
}

// A ref is a reference to another call's output inside a call's Args.
type ref struct {
	start, end int // byte span of the reference object in Args
	call       int // index in the batch of the call it refers to; set by plan
	id         string
	pointer    string
	hasPointer bool
}

// refError is a malformed reference.
type refError struct{ v Violation }

func (e refError) Error() string { return e.v.String() }

// refDepth is the least depth to which arguments are read for
// references; a registry that accepts deeper arguments has them read to
// its own limit, so that no reference it would accept is left unread.
const refDepth = 64

// findRefs returns the references in args in document order. Malformed
// JSON gives no references and no error: the registry reports it. It
// reads args once, whatever their nesting.
func findRefs(args []byte, maxDepth int) ([]ref, error) {
	f := refFinder{data: args, target: -1, maxDepth: max(maxDepth, refDepth)}
	if n := bytes.Count(args, refKey); n > 0 {
		f.refs = make([]ref, 0, n) // an upper bound: one slice, not a growing one
	}
	i, err := f.value(0, 0)
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

// pointerTo returns the JSON pointer of the object that starts at
// args[target], for messages. args are arguments findRefs accepted.
func pointerTo(args []byte, target, maxDepth int) string {
	f := refFinder{data: args, target: target, maxDepth: max(maxDepth, refDepth)}
	f.value(0, 0)
	return f.at
}

// A refFinder walks arguments for references, keeping the path to where
// it is so that a message can name it.
type refFinder struct {
	data   []byte
	refs   []ref
	path   []pathSegment
	target int    // pointerTo's object; -1 for findRefs
	at     string // the pointer to target, once found
	// maxDepth is how deep the arguments are read, at least refDepth.
	maxDepth int
}

// A pathSegment is a step on the path from the root: an object member's
// key, or an array index when key is nil.
type pathSegment struct {
	key   []byte
	index int
}

// errFound stops the walk of pointerTo.
var errFound = errors.New("found")

// pointer returns the path as a JSON pointer, each step shortened.
func (f *refFinder) pointer() string {
	var b strings.Builder
	for _, s := range f.path {
		b.WriteByte('/')
		if s.key == nil {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(shorten(escapePointer(string(s.key)), 60))
		}
	}
	return b.String()
}

func (f *refFinder) value(i, depth int) (int, error) {
	d := f.data
	i = jsontext.SkipSpace(d, i)
	if i >= len(d) {
		return i, jsontext.UnexpectedEnd(i)
	}
	if depth >= f.maxDepth {
		return jsontext.SkipValue(d, i, depth, f.maxDepth)
	}
	switch d[i] {
	case '{':
		return f.object(i, depth)
	case '[':
		i = jsontext.SkipSpace(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		f.path = append(f.path, pathSegment{})
		top := len(f.path) - 1
		for k := 0; ; k++ {
			f.path[top].index = k
			var err error
			if i, err = f.value(i, depth+1); err != nil {
				return i, err
			}
			i = jsontext.SkipSpace(d, i)
			if i >= len(d) {
				return i, jsontext.UnexpectedEnd(i)
			}
			if d[i] == ']' {
				f.path = f.path[:top]
				return i + 1, nil
			}
			if d[i] != ',' {
				return i, jsontext.Unexpected(d, i, "',' or ']'")
			}
			i++
		}
	default:
		return jsontext.SkipValue(d, i, depth, f.maxDepth)
	}
}

// object reads the object at d[start], recording it as a reference when
// it has the key "$output" and the references inside it otherwise. It
// looks into each member as it reads it, and forgets what it found inside
// once the object turns out to be a reference, so that every byte is read
// once.
func (f *refFinder) object(start, depth int) (int, error) {
	if start == f.target {
		f.at = f.pointer()
		return start, errFound
	}
	d := f.data
	i := jsontext.SkipSpace(d, start+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	mark := len(f.refs)
	r := ref{start: start}
	isRef, ok := false, true
	f.path = append(f.path, pathSegment{})
	top := len(f.path) - 1
	for {
		i = jsontext.SkipSpace(d, i)
		if i >= len(d) || d[i] != '"' {
			return i, jsontext.Unexpected(d, i, "a string key")
		}
		key, next, err := jsontext.ReadString(d, i, nil)
		if err != nil {
			return next, err
		}
		f.path[top].key = key
		var field *string // where a reference keeps this member
		switch string(key) {
		case "$output":
			isRef, field = true, &r.id
		case "pointer":
			r.hasPointer, field = true, &r.pointer
		default:
			ok = false
		}
		i = jsontext.SkipSpace(d, next)
		if i >= len(d) || d[i] != ':' {
			return i, jsontext.Unexpected(d, i, "':'")
		}
		i = jsontext.SkipSpace(d, i+1)
		if i < len(d) && d[i] == '"' {
			var v []byte
			if v, i, err = jsontext.ReadString(d, i, nil); err != nil {
				return i, err
			}
			if field != nil {
				*field = string(v)
			}
		} else {
			ok = ok && field == nil
			if i, err = f.value(i, depth+1); err != nil {
				return i, err
			}
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
	f.path = f.path[:top]
	if !isRef {
		return i, nil
	}
	f.refs = f.refs[:mark] // a reference holds no references
	r.end = i
	if !ok || r.id == "" || r.hasPointer && r.pointer != "" && r.pointer[0] != '/' {
		return i, refError{Violation{
			Pointer:  f.pointer(),
			Expected: `a reference {"$output":"<call ID>"} with an optional "pointer":"/json/pointer" and no other keys ("$output" is reserved for references)`,
			Got:      shorten(strings.ToValidUTF8(string(d[start:min(i, start+1024)]), "\uFFFD"), 120),
		}}
	}
	f.refs = append(f.refs, r)
	return i, nil
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// readFactor bounds the reading that references cause: resolving one
// call's references may read at most readFactor times the argument limit
// of other calls' outputs, where a reference reads its output from the
// start to the end of the value it selects.
const readFactor = 32

// substitute returns the arguments of call i with every reference
// replaced by the output it names. The referred calls have all finished.
// It stops, with an error naming the call and the limit, as soon as the
// arguments would grow past limit bytes or the references have read more
// than readFactor × limit bytes of outputs, so that its work is bounded by
// the limit and not by what the references would expand to.
func substitute(i int, p *plan, out []Outcome, limit int) ([]byte, error) {
	c := p.calls[i]
	fail := func(at int, v Violation) error {
		if at >= 0 {
			v.Pointer = pointerTo(c.Args, at, p.maxDepth)
		}
		return &ArgumentError{Tool: c.Name, Args: shortenArgs(c.Args), Violations: []Violation{v}}
	}
	tooLarge := func(at int) error {
		return fail(at, Violation{
			Expected: fmt.Sprintf("arguments of at most %d bytes once the outputs that call %s refers to are substituted", limit, callName(p.calls, i)),
			Got:      "more",
			Hint:     `refer to a smaller part of an output with "pointer", or to fewer outputs`,
		})
	}
	b := make([]byte, 0, min(len(c.Args), limit))
	budget := math.MaxInt
	if limit < math.MaxInt/readFactor {
		budget = readFactor * limit
	}
	maxRead := budget
	var texts map[int]*outputDoc
	last := 0
	for _, r := range p.refs[i] {
		res := out[r.call].Result
		if !r.hasPointer && !hasStructured(res) && len(b)+r.start-last+len(res.Output)+2 > limit {
			return nil, tooLarge(r.start) // a text output too large to fit even unescaped is not encoded
		}
		v, read, err := resolve(r, res, &texts)
		if budget -= read; budget < 0 {
			return nil, fail(r.start, Violation{
				Expected: fmt.Sprintf("references of call %s that read at most %d bytes of other calls' outputs in all (a pointer reads its output up to the value it selects)", callName(p.calls, i), maxRead),
				Got:      "more by this reference",
				Hint:     "refer to fewer values",
			})
		}
		if err != nil {
			return nil, fail(r.start, Violation{Expected: err.expected, Got: err.got})
		}
		if len(b)+r.start-last+len(v) > limit {
			return nil, tooLarge(r.start)
		}
		b = append(b, c.Args[last:r.start]...)
		b = append(b, v...)
		last = r.end
	}
	if len(b)+len(c.Args)-last > limit {
		return nil, tooLarge(-1)
	}
	return append(b, c.Args[last:]...), nil
}

type resolveError struct{ expected, got string }

// An outputDoc is a call's text output prepared for the references that
// read it, so that each is prepared once per call to substitute.
type outputDoc struct {
	quoted []byte // the output as a JSON string; nil until needed
	doc    []byte // the output as a JSON document, for pointers
	parsed bool   // doc has been checked
	valid  bool   // doc is valid JSON
}

// resolve returns the JSON value r refers to in res, the output of the
// call it names, and how many bytes of the output it read. texts holds the
// text outputs prepared so far, by call.
func resolve(r ref, res Result, texts *map[int]*outputDoc) (v []byte, read int, err *resolveError) {
	doc := []byte(res.Structured)
	if !hasStructured(res) {
		if *texts == nil {
			*texts = make(map[int]*outputDoc)
		}
		t := (*texts)[r.call]
		if t == nil {
			t = new(outputDoc)
			(*texts)[r.call] = t
		}
		if !r.hasPointer {
			if t.quoted == nil {
				t.quoted, read = marshalString(res.Output), len(res.Output)
			}
			return t.quoted, read, nil
		}
		if !t.parsed {
			t.doc, t.parsed, read = []byte(res.Output), true, len(res.Output)
			t.valid = json.Valid(t.doc)
		}
		if !t.valid {
			return nil, read, &resolveError{
				expected: fmt.Sprintf("JSON output from call %q to apply pointer %q to", shorten(r.id, 64), shorten(r.pointer, 64)),
				got:      "text output: " + shorten(res.Output, 80),
			}
		}
		doc = t.doc
	}
	v, end, msg := pointerGet(doc, r.pointer)
	read += end
	if msg != "" {
		return nil, read, &resolveError{
			expected: fmt.Sprintf("a value at pointer %q in the output of call %q", shorten(r.pointer, 64), shorten(r.id, 64)),
			got:      msg,
		}
	}
	return v, read, nil
}

// hasStructured reports whether res has structured content, which
// references read instead of its text.
func hasStructured(res Result) bool { return len(bytes.TrimSpace(res.Structured)) > 0 }

func marshalString(s string) []byte {
	var b bytes.Buffer
	writeJSONString(&b, s)
	return b.Bytes()
}

// pointerGet returns the value at the JSON pointer ptr in the JSON
// document doc and the index just past it, or a description of why there
// is none and how far it read.
func pointerGet(doc []byte, ptr string) (v []byte, end int, msg string) {
	i := jsontext.SkipSpace(doc, 0)
	rest := ptr
	walked := "" // the part of ptr that has been followed
	for rest != "" {
		walked = ptr[:len(ptr)-len(rest)]
		rest = rest[1:] // the leading '/'
		tok := rest
		if k := strings.IndexByte(rest, '/'); k >= 0 {
			tok, rest = rest[:k], rest[k:]
		} else {
			rest = ""
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if i >= len(doc) {
			return nil, i, "no value"
		}
		switch doc[i] {
		case '{':
			next, ok := memberValue(doc, i, tok)
			if !ok {
				return nil, next, fmt.Sprintf("no member %q at %q", shorten(tok, 64), walkedOrRoot(walked))
			}
			i = next
		case '[':
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || strconv.Itoa(n) != tok {
				return nil, i, fmt.Sprintf("an array at %q, which %q cannot index", walkedOrRoot(walked), shorten(tok, 64))
			}
			next, ok := elementValue(doc, i, n)
			if !ok {
				return nil, next, fmt.Sprintf("an array at %q with no element %d", walkedOrRoot(walked), n)
			}
			i = next
		default:
			return nil, i, fmt.Sprintf("a %s at %q, which has no members", jsontext.KindName(doc[i]), walkedOrRoot(walked))
		}
	}
	end, err := jsontext.SkipValue(doc, i, 0, 10000)
	if err != nil {
		return nil, end, "malformed JSON"
	}
	return doc[i:end], end, ""
}

// walkedOrRoot names, for messages, the part of a pointer followed so
// far, shortened.
func walkedOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return shorten(p, 200)
}

// memberValue returns the index of the value of member key in the object
// at doc[i], or, when there is none, how far it read.
func memberValue(doc []byte, i int, key string) (int, bool) {
	i = jsontext.SkipSpace(doc, i+1)
	for i < len(doc) && doc[i] == '"' {
		k, next, err := jsontext.ReadString(doc, i, nil)
		if err != nil {
			return next, false
		}
		i = jsontext.SkipSpace(doc, next)
		if i >= len(doc) || doc[i] != ':' {
			return i, false
		}
		i = jsontext.SkipSpace(doc, i+1)
		if string(k) == key {
			return i, true
		}
		if i, err = jsontext.SkipValue(doc, i, 0, 10000); err != nil {
			return i, false
		}
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return i, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
	return i, false
}

// elementValue returns the index of element n of the array at doc[i], or,
// when there is none, how far it read.
func elementValue(doc []byte, i, n int) (int, bool) {
	i = jsontext.SkipSpace(doc, i+1)
	if i < len(doc) && doc[i] == ']' {
		return i, false
	}
	for k := 0; i < len(doc); k++ {
		if k == n {
			return i, true
		}
		var err error
		if i, err = jsontext.SkipValue(doc, i, 0, 10000); err != nil {
			return i, false
		}
		i = jsontext.SkipSpace(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return i, false
		}
		i = jsontext.SkipSpace(doc, i+1)
	}
	return i, false
}
