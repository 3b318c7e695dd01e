package jsonschema

import (
	"fmt"
	"math"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// Instance kinds, as stored on the tape.
const (
	kObject uint8 = iota + 1
	kArray
	kString
	kNumber
	kTrue
	kFalse
	kNull
)

// A tnode is one value of a parsed instance. The tape stores values in
// document order; an object's members are stored as a key (a kString
// node) followed by the value's subtree.
type tnode struct {
	kind  uint8
	esc   bool  // the decoded string is in the arena, not in data
	start int32 // offset of the value's first byte in data
	end   int32 // offset just past the value
	soff  int32 // decoded string: offset in data or arena
	slen  int32
	n     int32 // members or elements
	next  int32 // tape index just past this subtree
}

// parser builds the tape for one instance.
type parser struct {
	data     []byte
	tape     []tnode
	arena    []byte
	scratch  []byte
	maxDepth int
}

func (p *parser) reset(data []byte, maxDepth int) {
	p.data = data
	p.tape = p.tape[:0]
	p.arena = p.arena[:0]
	p.maxDepth = maxDepth
}

// parse parses the whole of p.data as one value, strictly.
func (p *parser) parse() error {
	if len(p.data) > math.MaxInt32 {
		return &jsontext.SyntaxError{Offset: 0, Msg: "input too large"}
	}
	i, err := p.value(0, 0)
	if err != nil {
		return err
	}
	if i = jsontext.SkipSpace(p.data, i); i != len(p.data) {
		return jsontext.Unexpected(p.data, i, "end of input")
	}
	return nil
}

func (p *parser) str(t *tnode) []byte {
	if t.esc {
		return p.arena[t.soff : t.soff+t.slen]
	}
	return p.data[t.soff : t.soff+t.slen]
}

func (p *parser) readString(i int) (next int, err error) {
	s, next, err := jsontext.ReadString(p.data, i, p.scratch)
	if err != nil {
		return next, err
	}
	t := tnode{kind: kString, start: int32(i), end: int32(next), n: 0}
	if len(s) == next-i-2 { // no escapes: s aliases data
		t.soff, t.slen = int32(i+1), int32(len(s))
	} else {
		t.esc = true
		t.soff, t.slen = int32(len(p.arena)), int32(len(s))
		p.arena = append(p.arena, s...)
		p.scratch = s[:0]
	}
	t.next = int32(len(p.tape) + 1)
	p.tape = append(p.tape, t)
	return next, nil
}

func (p *parser) depthError(i int) error {
	return &jsontext.SyntaxError{Offset: i, Msg: fmt.Sprintf("%s (more than %d levels)", jsontext.ErrDepth, p.maxDepth)}
}

func (p *parser) value(i, depth int) (int, error) {
	data := p.data
	i = jsontext.SkipSpace(data, i)
	if i >= len(data) {
		return i, jsontext.UnexpectedEnd(i)
	}
	var err error
	switch c := data[i]; c {
	case '"':
		return p.readString(i)
	case 't', 'f', 'n':
		word, kind := "null", kNull
		switch c {
		case 't':
			word, kind = "true", kTrue
		case 'f':
			word, kind = "false", kFalse
		}
		next, err := jsontext.ReadLiteral(data, i, word)
		if err != nil {
			return next, err
		}
		p.tape = append(p.tape, tnode{kind: kind, start: int32(i), end: int32(next), next: int32(len(p.tape) + 1)})
		return next, nil
	case '[':
		if depth >= p.maxDepth {
			return i, p.depthError(i)
		}
		at := len(p.tape)
		p.tape = append(p.tape, tnode{kind: kArray, start: int32(i)})
		j := jsontext.SkipSpace(data, i+1)
		n := 0
		if j < len(data) && data[j] == ']' {
			j++
		} else {
			for {
				if j, err = p.value(j, depth+1); err != nil {
					return j, err
				}
				n++
				j = jsontext.SkipSpace(data, j)
				if j >= len(data) {
					return j, jsontext.UnexpectedEnd(j)
				}
				if data[j] == ']' {
					j++
					break
				}
				if data[j] != ',' {
					return j, jsontext.Unexpected(data, j, "',' or ']'")
				}
				j++
			}
		}
		t := &p.tape[at]
		t.end, t.n, t.next = int32(j), int32(n), int32(len(p.tape))
		return j, nil
	case '{':
		if depth >= p.maxDepth {
			return i, p.depthError(i)
		}
		at := len(p.tape)
		p.tape = append(p.tape, tnode{kind: kObject, start: int32(i)})
		j := jsontext.SkipSpace(data, i+1)
		n := 0
		var seen map[string]struct{}
		if j < len(data) && data[j] == '}' {
			j++
		} else {
			for {
				j = jsontext.SkipSpace(data, j)
				if j >= len(data) {
					return j, jsontext.UnexpectedEnd(j)
				}
				if data[j] != '"' {
					return j, jsontext.Unexpected(data, j, "a string key")
				}
				keyAt := j
				if j, err = p.readString(j); err != nil {
					return j, err
				}
				if seen, err = p.checkDuplicate(at, len(p.tape)-1, keyAt, n, seen); err != nil {
					return keyAt, err
				}
				j = jsontext.SkipSpace(data, j)
				if j >= len(data) {
					return j, jsontext.UnexpectedEnd(j)
				}
				if data[j] != ':' {
					return j, jsontext.Unexpected(data, j, "':'")
				}
				if j, err = p.value(j+1, depth+1); err != nil {
					return j, err
				}
				n++
				j = jsontext.SkipSpace(data, j)
				if j >= len(data) {
					return j, jsontext.UnexpectedEnd(j)
				}
				if data[j] == '}' {
					j++
					break
				}
				if data[j] != ',' {
					return j, jsontext.Unexpected(data, j, "',' or '}'")
				}
				j++
			}
		}
		t := &p.tape[at]
		t.end, t.n, t.next = int32(j), int32(n), int32(len(p.tape))
		return j, nil
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			_, next, err := jsontext.ReadNumber(data, i)
			if err != nil {
				return next, err
			}
			p.tape = append(p.tape, tnode{kind: kNumber, start: int32(i), end: int32(next), next: int32(len(p.tape) + 1)})
			return next, nil
		}
		return i, jsontext.Unexpected(data, i, "a value")
	}
}

// dupScanLimit is the member count up to which duplicate keys are found by
// comparing with every earlier key; larger objects use a set.
const dupScanLimit = 32

// checkDuplicate returns an error if the key just read (tape index k, the
// n-th member) repeats an earlier key of the object at tape index obj.
// seen is the object's key set once it has more than dupScanLimit members.
func (p *parser) checkDuplicate(obj, k, keyAt, n int, seen map[string]struct{}) (map[string]struct{}, error) {
	key := p.str(&p.tape[k])
	if n < dupScanLimit {
		for m := obj + 1; m < k; m = int(p.tape[m+1].next) {
			if string(p.str(&p.tape[m])) == string(key) {
				return seen, duplicateKey(keyAt, key)
			}
		}
		return seen, nil
	}
	if seen == nil {
		seen = make(map[string]struct{}, 2*n)
		for m := obj + 1; m < k; m = int(p.tape[m+1].next) {
			seen[string(p.str(&p.tape[m]))] = struct{}{}
		}
	}
	if _, dup := seen[string(key)]; dup {
		return seen, duplicateKey(keyAt, key)
	}
	seen[string(key)] = struct{}{}
	return seen, nil
}

func duplicateKey(at int, key []byte) error {
	return &jsontext.SyntaxError{Offset: at, Msg: fmt.Sprintf("duplicate key %q", jsontext.ShortKey(key))}
}
