package jsonschema

import (
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// Bounds on schema documents. Schemas can come from MCP servers over the
// network, so compiling one must stay cheap whatever it contains.
const (
	// MaxSchemaBytes is the largest schema document Compile accepts.
	MaxSchemaBytes = 4 << 20
	// MaxSchemaDepth is the deepest nesting of JSON values Compile accepts.
	MaxSchemaDepth   = 128
	maxSchemaValues  = 200_000
	maxPatternBytes  = 4096
	maxTotalPatterns = 1 << 20
	maxInPlaceDepth  = 256    // longest $ref/allOf/... chain at one instance location
	maxInPlaceCount  = 10_000 // subschemas applied at one instance location
)

// A jval is one value of a parsed schema document.
type jval struct {
	kind    uint8
	s       string // decoded string, or number literal
	raw     []byte // the value's text in the document
	elems   []*jval
	members []member
	node    *node // the schema compiled from this value, once it is
}

// A member is a key and its value in an object of a schema document.
type member struct {
	key string
	val *jval
}

func (v *jval) get(key string) (*jval, bool) {
	for _, m := range v.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

type docParser struct {
	data    []byte
	count   int
	schemas int // objects and booleans: the most schemas there can be
	buf     []byte
	slab    []jval   // jvals are allocated in chunks
	members []member // members of the open objects, as a stack
	elems   []*jval  // elements of the open arrays, as a stack
}

// keywords interns the names of keywords, so that keys do not allocate.
var keywords = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`$schema $id $ref $defs definitions $anchor $dynamicAnchor $comment
		title description default examples deprecated readOnly writeOnly type enum const properties
		required additionalProperties patternProperties propertyNames minProperties maxProperties
		dependentRequired dependentSchemas dependencies prefixItems items additionalItems minItems maxItems
		uniqueItems contains minContains maxContains minLength maxLength pattern format minimum maximum
		exclusiveMinimum exclusiveMaximum multipleOf allOf anyOf oneOf not if then else`) {
		m[k] = k
	}
	return m
}()

func (p *docParser) newVal(kind uint8) *jval {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]jval, 0, min(max(len(p.data)/16, 8), 256))
	}
	p.slab = append(p.slab, jval{kind: kind})
	return &p.slab[len(p.slab)-1]
}

func parseDoc(data []byte) (*jval, int, error) {
	if len(data) > MaxSchemaBytes {
		return nil, 0, &SchemaError{Msg: fmt.Sprintf("the schema is larger than %d bytes", MaxSchemaBytes)}
	}
	p := &docParser{data: data, members: make([]member, 0, 16)}
	v, i, err := p.value(0, 0)
	if err != nil {
		return nil, 0, err
	}
	if i = jsontext.SkipSpace(data, i); i != len(data) {
		return nil, 0, jsontext.Unexpected(data, i, "end of input")
	}
	return v, p.schemas, nil
}

func (p *docParser) value(i, depth int) (*jval, int, error) {
	data := p.data
	i = jsontext.SkipSpace(data, i)
	if i >= len(data) {
		return nil, i, jsontext.UnexpectedEnd(i)
	}
	p.count++
	if p.count > maxSchemaValues {
		return nil, i, &jsontext.SyntaxError{Offset: i, Msg: fmt.Sprintf("more than %d values in the schema", maxSchemaValues)}
	}
	start := i
	var err error
	switch c := data[i]; c {
	case '"':
		var s []byte
		s, i, err = jsontext.ReadString(data, i, p.buf)
		if err != nil {
			return nil, i, err
		}
		v := p.newVal(kString)
		v.s, v.raw = string(s), data[start:i]
		return v, i, nil
	case 't', 'f', 'n':
		if c != 'n' {
			p.schemas++
		}
		word, kind := "null", kNull
		switch c {
		case 't':
			word, kind = "true", kTrue
		case 'f':
			word, kind = "false", kFalse
		}
		if i, err = jsontext.ReadLiteral(data, i, word); err != nil {
			return nil, i, err
		}
		v := p.newVal(kind)
		v.raw = data[start:i]
		return v, i, nil
	case '[', '{':
		if depth >= MaxSchemaDepth {
			return nil, i, &jsontext.SyntaxError{Offset: i, Msg: fmt.Sprintf("%s (more than %d levels)", jsontext.ErrDepth, MaxSchemaDepth)}
		}
		closer := byte(']')
		v := p.newVal(kArray)
		if c == '{' {
			closer, v.kind = '}', kObject
			p.schemas++
		}
		i = jsontext.SkipSpace(data, i+1)
		if i < len(data) && data[i] == closer {
			v.raw = data[start : i+1]
			return v, i + 1, nil
		}
		mbase, ebase := len(p.members), len(p.elems)
		var seen map[string]struct{}
		for {
			if c == '{' {
				i = jsontext.SkipSpace(data, i)
				if i >= len(data) {
					return nil, i, jsontext.UnexpectedEnd(i)
				}
				if data[i] != '"' {
					return nil, i, jsontext.Unexpected(data, i, "a string key")
				}
				keyAt := i
				var k []byte
				if k, i, err = jsontext.ReadString(data, i, p.buf); err != nil {
					return nil, i, err
				}
				keys := p.members[mbase:]
				if len(keys) < dupScanLimit {
					for _, prev := range keys {
						if prev.key == string(k) {
							return nil, keyAt, duplicateKey(keyAt, k)
						}
					}
				} else {
					if seen == nil {
						seen = make(map[string]struct{}, 2*len(keys))
						for _, prev := range keys {
							seen[prev.key] = struct{}{}
						}
					}
					if _, dup := seen[string(k)]; dup {
						return nil, keyAt, duplicateKey(keyAt, k)
					}
					seen[string(k)] = struct{}{}
				}
				key, ok := keywords[string(k)]
				if !ok {
					key = string(k)
				}
				p.members = append(p.members, member{key: key})
				i = jsontext.SkipSpace(data, i)
				if i >= len(data) {
					return nil, i, jsontext.UnexpectedEnd(i)
				}
				if data[i] != ':' {
					return nil, i, jsontext.Unexpected(data, i, "':'")
				}
				i++
			}
			var e *jval
			if e, i, err = p.value(i, depth+1); err != nil {
				return nil, i, err
			}
			if c == '{' {
				p.members[len(p.members)-1].val = e
			} else {
				p.elems = append(p.elems, e)
			}
			i = jsontext.SkipSpace(data, i)
			if i >= len(data) {
				return nil, i, jsontext.UnexpectedEnd(i)
			}
			if data[i] == closer {
				v.raw = data[start : i+1]
				if c == '{' {
					v.members = append([]member(nil), p.members[mbase:]...)
					clear(p.members[mbase:])
					p.members = p.members[:mbase]
				} else {
					v.elems = append([]*jval(nil), p.elems[ebase:]...)
					clear(p.elems[ebase:])
					p.elems = p.elems[:ebase]
				}
				return v, i + 1, nil
			}
			if data[i] != ',' {
				return nil, i, jsontext.Unexpected(data, i, fmt.Sprintf("',' or '%c'", closer))
			}
			i++
		}
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			var lit []byte
			if lit, i, err = jsontext.ReadNumber(data, i); err != nil {
				return nil, i, err
			}
			v := p.newVal(kNumber)
			v.s, v.raw = string(lit), lit
			return v, i, nil
		}
		return nil, i, jsontext.Unexpected(data, i, "a value")
	}
}
