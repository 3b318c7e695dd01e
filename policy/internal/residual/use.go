package residual

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// Use is what of the context a set of policies reads.
type Use struct {
	// Args are the names of the arguments read (context.args.name or
	// context.args has name), sorted; nil with All.
	Args  []string
	All   bool // the arguments are read as a whole: all of them are needed
	Other bool // something other than args is read (now, hour): build all the rest
	// ComparedPaths are the values within the arguments that an operand
	// of == or != may evaluate to (for context.args.opts.mode, the path
	// "opts", "mode"), and Compared the top-level
	// arguments they are in, sorted. ComparedAll says that the arguments
	// may be compared as a whole (context.args or context is an operand).
	// See FirstList.
	ComparedPaths [][]Step
	Compared      []string
	ComparedAll   bool
}

// A Step is one step of a path into the arguments: into the member Key
// of an object, or, with Elems, into each element of a list.
type Step struct {
	Key   string
	Elems bool
}

// UseOf returns what of the context a policy's conditions read.
func UseOf(p *ast.Policy) Use {
	var u Use
	for _, cond := range p.Conditions {
		readsIn(cond.Body, &u)
		ast.Inspect(ast.NewNode(cond.Body), func(n ast.IsNode) bool {
			switch n := n.(type) {
			case ast.NodeTypeEquals:
				comparedIn(n.Left, &u, false)
				comparedIn(n.Right, &u, false)
			case ast.NodeTypeNotEquals:
				comparedIn(n.Left, &u, false)
				comparedIn(n.Right, &u, false)
			case ast.NodeTypeContains:
				// set.contains(x): x is compared with each element.
				comparedIn(n.Left, &u, true)
				comparedIn(n.Right, &u, false)
			case ast.NodeTypeContainsAll:
				comparedIn(n.Left, &u, true)
				comparedIn(n.Right, &u, true)
			case ast.NodeTypeContainsAny:
				comparedIn(n.Left, &u, true)
				comparedIn(n.Right, &u, true)
			}
			return true
		})
	}
	slices.Sort(u.Compared)
	u.Compared = slices.Compact(u.Compared)
	return u
}

// comparedIn adds to u the values within the arguments that n, an
// operand of == or != (or, with elems, a set whose elements contains,
// containsAll or containsAny compare), may evaluate to: those it reads
// through a chain of attribute accesses from context.args, including
// through the branches of if-then-else and the members of set and record
// literals. Any other expression (a method call, an operator, has, like)
// evaluates to a boolean, a number or a string of its own. What cannot be
// followed (an access on the result of an expression) counts every
// argument it reads as compared whole.
func comparedIn(n ast.IsNode, u *Use, elems bool) {
	switch n := n.(type) {
	case ast.NodeTypeIfThenElse:
		comparedIn(n.Then, u, elems)
		comparedIn(n.Else, u, elems)
	case ast.NodeTypeSet:
		for _, e := range n.Elements {
			comparedIn(e, u, false) // a member: compared whole, with elems or not
		}
	case ast.NodeTypeRecord:
		for _, e := range n.Elements {
			comparedIn(e.Value, u, false)
		}
	case ast.NodeTypeVariable:
		if n.Name == "context" {
			u.ComparedAll = true
		}
	case ast.NodeTypeAccess:
		var path []string
		var root ast.IsNode = n
		for {
			acc, ok := root.(ast.NodeTypeAccess)
			if !ok {
				break
			}
			path = append(path, string(acc.Value))
			root = acc.Arg
		}
		v, isVar := root.(ast.NodeTypeVariable)
		if !isVar {
			var c Use
			readsIn(root, &c)
			for _, a := range c.Args {
				u.ComparedPaths = append(u.ComparedPaths, []Step{{Key: a}})
				u.Compared = append(u.Compared, a)
			}
			u.ComparedAll = u.ComparedAll || c.All
			return
		}
		slices.Reverse(path)
		switch {
		case v.Name != "context" || path[0] != "args":
		case len(path) == 1:
			u.ComparedAll = true
		default:
			steps := make([]Step, 0, len(path))
			for _, k := range path[1:] {
				steps = append(steps, Step{Key: k})
			}
			if elems {
				steps = append(steps, Step{Elems: true})
			}
			u.ComparedPaths = append(u.ComparedPaths, steps)
			u.Compared = append(u.Compared, path[1])
		}
	}
}

// readsIn adds to u what of the context the expression body reads.
func readsIn(body ast.IsNode, u *Use) {
	isContext := func(n ast.IsNode) bool {
		v, ok := n.(ast.NodeTypeVariable)
		return ok && v.Name == "context"
	}
	ast.Inspect(ast.NewNode(body), func(n ast.IsNode) bool {
		var op ast.StrOpNode
		var has bool
		switch n := n.(type) {
		case ast.NodeTypeAccess:
			op = n.StrOpNode
		case ast.NodeTypeHas:
			op, has = n.StrOpNode, true
		case ast.NodeTypeVariable:
			if n.Name == "context" {
				u.All, u.Other = true, true
			}
			return false
		default:
			return true
		}
		if inner, ok := op.Arg.(ast.NodeTypeAccess); ok && inner.Value == "args" && isContext(inner.Arg) {
			u.Args = append(u.Args, string(op.Value)) // context.args.name, context.args has name
			return false
		}
		if isContext(op.Arg) {
			switch {
			case op.Value != "args":
				u.Other = true
			case !has:
				u.All = true // context.args, other than to read one argument
			}
			return false
		}
		return true
	})
}

// Union returns what of the context policies that each read one of uses
// read together.
func Union(uses []Use) Use {
	var u Use
	for _, r := range uses {
		u.All = u.All || r.All
		u.Other = u.Other || r.Other
		u.Args = append(u.Args, r.Args...)
		u.Compared = append(u.Compared, r.Compared...)
		u.ComparedPaths = append(u.ComparedPaths, r.ComparedPaths...)
		u.ComparedAll = u.ComparedAll || r.ComparedAll
	}
	slices.Sort(u.Compared)
	u.Compared = slices.Compact(u.Compared)
	if u.All {
		u.Args = nil
		return u
	}
	slices.Sort(u.Args)
	u.Args = slices.Compact(u.Args)
	if u.Args == nil {
		u.Args = []string{} // none: distinct from all
	}
	return u
}

var selectBuffers = sync.Pool{New: func() any { return new([]byte) }}

// selectArgs returns the JSON object args with only the members named in
// names, in their order, written in *buf; or args itself when it is not
// an object, for ArgsRecord to refuse. It refuses, as ArgsRecord would, a malformed member it drops:
// dropping members changes what a policy can read only for members no
// policy reads.
func selectArgs(args []byte, names []string, bufp *[]byte) ([]byte, error) {
	p := argParser{b: args}
	p.space()
	if p.i == len(p.b) || p.b[p.i] != '{' {
		return args, nil
	}
	p.i++
	buf := append((*bufp)[:0], '{')
	defer func() { *bufp = buf[:0] }()
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		buf = append(buf, '}')
		return buf, nil
	}
	for {
		p.space()
		start := p.i
		key, escaped, err := p.rawStr()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, errBadArgs
		}
		p.i++
		if err := p.skip(1); err != nil {
			return nil, err
		}
		if wanted(key, escaped, names) {
			if len(buf) > 1 {
				buf = append(buf, ',')
			}
			buf = append(buf, args[start:p.i]...)
		}
		p.space()
		if p.i >= len(p.b) {
			return nil, errBadArgs
		}
		if p.b[p.i] == '}' {
			buf = append(buf, '}')
			return buf, nil
		}
		if p.b[p.i] != ',' {
			return nil, errBadArgs
		}
		p.i++
	}
}

func wanted(key []byte, escaped bool, names []string) bool {
	if escaped {
		var k string
		if err := json.Unmarshal(key, &k); err != nil {
			return false
		}
		return slices.Contains(names, k)
	}
	raw := key[1 : len(key)-1]
	for _, n := range names {
		if string(raw) == n {
			return true
		}
	}
	return false
}

// rawStr scans a JSON string as str does and returns its bytes, quotes
// included, and whether it has escapes.
func (p *argParser) rawStr() ([]byte, bool, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, errBadArgs
	}
	start := p.i
	escaped := false
	for p.i++; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case '\\':
			escaped = true
			p.i++
		case '"':
			p.i++
			raw := p.b[start:p.i]
			if escaped && !json.Valid(raw) {
				return nil, false, errBadArgs
			}
			return raw, escaped, nil
		}
	}
	return nil, false, errBadArgs
}

// skip scans one JSON value as value does, refusing what value refuses,
// without building it.
func (p *argParser) skip(depth int) error {
	if depth > MaxDepth {
		return errBadArgs
	}
	p.space()
	if p.i >= len(p.b) {
		return errBadArgs
	}
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			return nil
		}
		for {
			if c == '{' {
				p.space()
				if _, _, err := p.rawStr(); err != nil {
					return err
				}
				p.space()
				if p.i >= len(p.b) || p.b[p.i] != ':' {
					return errBadArgs
				}
				p.i++
			} else if p.space(); p.i < len(p.b) && p.b[p.i] == 'n' {
				p.odd = true // a null in a set, which Cedar cannot hold
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.space()
			if p.i >= len(p.b) {
				return errBadArgs
			}
			if p.b[p.i] == end {
				p.i++
				return nil
			}
			if p.b[p.i] != ',' {
				return errBadArgs
			}
			p.i++
		}
	case c == '"':
		_, _, err := p.rawStr()
		return err
	case c == 't' && p.lit("true"), c == 'f' && p.lit("false"), c == 'n' && p.lit("null"):
		return nil
	case c == '-' || c >= '0' && c <= '9':
		_, err := p.number()
		return err
	}
	return errBadArgs
}

// number scans a JSON number and returns its text. It refuses text that
// is not a JSON number, and sets p.odd when the number may not be a whole
// number in 64 bits (see wholeNumber).
func (p *argParser) number() ([]byte, error) {
	start := p.i
	for p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
		p.i++
	}
	lit := p.b[start:p.i]
	if plainInteger(lit) {
		return lit, nil
	}
	if _, _, valid := wholeNumber(lit); !valid {
		return nil, errBadArgs
	}
	p.odd = true
	return lit, nil
}

// plainInteger reports whether lit is a JSON integer of at most 18
// digits, which is always a whole number in 64 bits.
func plainInteger(lit []byte) bool {
	d := lit
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
