package residual

import (
	"encoding/json"
	"math/bits"
	"slices"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/eval"
	"github.com/miniopenclaw/tool"
)

// This file decides calls whose policies, once the principal and the tool
// are known, depend only on top-level arguments through a small set of
// operations, without Cedar: the residual conditions partial evaluation
// leaves are compiled to a tree of fnodes that reads the arguments from
// their JSON directly.
//
// Equivalence with Cedar rests on one rule: the fast path answers only
// when every step it takes is one whose result it knows to be Cedar's.
// Any step whose Cedar result would be an error (a missing attribute, an
// operand of the wrong type), or whose value the fast path does not
// model exactly (a record, a set, a number that is not a plain integer),
// makes the whole decision fall back to Cedar, which then decides and
// reports it as it always has. The fast path therefore never has to model
// Cedar's errors, only its successful values, on strings, longs and
// booleans.

// MaxArgs bounds the distinct arguments a fast program reads, and
// MaxRules the rules it evaluates.
const (
	MaxArgs  = 8
	MaxRules = 64
)

// A Program decides calls from their arguments as Cedar would over a
// list of rules, once the principal and the tool are known: bit i of what
// [Program.Decide] returns is set when rule i applies.
type Program struct {
	names []string // the arguments read, by slot
	rules []fastRule
	// Forbids and Asks are the bits of the rules that are forbids and
	// asking permits.
	Forbids, Asks uint64
	// unread are the arguments the verdict's policies read that the
	// residuals do not, and readsAll says they read all of them: a call
	// must still hold only whole Longs there (see FirstInexact).
	unread   []string
	readsAll bool
}

// A fastRule is one of the program's rules, with its residual conditions.
type fastRule struct {
	id    []string   // the rule's id alone
	conds []fastCond // all must hold; none: the rule applies
}

type fastCond struct {
	when bool // when, or unless
	body fnode
}

// fkind is the kind of a value the fast path holds.
type fkind uint8

const (
	fAbsent fkind = iota // not in context.args
	fBool
	fLong
	fString
	// fOther is present, or maybe present, but not a value the fast path
	// models (a record, a set, a number that is not a plain integer,
	// which Cedar may hold as a decimal or leave out): using it, even with
	// has, falls back.
	fOther
	fSet // only from literals: a set of strings, longs and booleans
)

type fval struct {
	k   fkind
	b   bool
	n   int64
	s   string
	set *[]fval // fSet's members; a pointer keeps fval, copied at every step, small
}

func (v fval) scalar() bool { return v.k == fBool || v.k == fLong || v.k == fString }

// equal is Cedar's == on two scalars: false for different types.
func (v fval) equal(w fval) bool {
	if v.k != w.k {
		return false
	}
	switch v.k {
	case fBool:
		return v.b == w.b
	case fLong:
		return v.n == w.n
	}
	return v.s == w.s
}

// fop is the operation of an fnode.
type fop uint8

const (
	opLit fop = iota
	opArg     // context.args.NAME
	opHas     // context.args has NAME
	opAnd
	opOr
	opNot
	opIf
	opEq
	opNe
	opLt
	opLe
	opGt
	opGe
	opLike
	opContains // a.contains(b)
	opError    // an error partial evaluation found: Cedar's, if reached
)

type fnode struct {
	op   fop
	slot int // opArg, opHas
	lit  fval
	like likeMatcher // opLike
	kids []fnode
}

// A Rule is one policy a [Program] evaluates: what partial evaluation
// left of it for a principal and a tool (its residual), with what the
// policy says when it applies.
type Rule struct {
	Residual    *ast.Policy
	ID          string
	Forbid, Ask bool
}

// Compile compiles the residual conditions of rules, in order, for calls
// whose arguments the rules' policies read as use says. It returns nil
// when there are more than MaxRules rules, or one of them is outside what
// a Program supports: Cedar must decide those calls.
func Compile(rules []Rule, use Use) *Program {
	if len(rules) > MaxRules {
		return nil
	}
	p := &Program{}
	for _, r := range rules {
		fr := fastRule{id: []string{r.ID}}
		for _, c := range r.Residual.Conditions {
			n, ok := p.compile(c.Body)
			if !ok {
				return nil
			}
			fr.conds = append(fr.conds, fastCond{when: bool(c.Condition), body: n})
		}
		switch {
		case r.Forbid:
			p.Forbids |= 1 << len(p.rules)
		case r.Ask:
			p.Asks |= 1 << len(p.rules)
		}
		p.rules = append(p.rules, fr)
	}
	p.readsAll = use.All
	for _, name := range use.Args {
		if !slices.Contains(p.names, name) {
			p.unread = append(p.unread, name)
		}
	}
	return p
}

// Decide decides the call req as Cedar would over the program's rules,
// the arguments named in paths read as cleaned paths: bit i of applied is
// set when rule i applies. It reads the arguments through
// [tool.AccessRequest.Argument] when it can, else from their JSON. ok is
// false when Cedar must decide.
func (p *Program) Decide(req *tool.AccessRequest, paths map[string]bool) (applied uint64, ok bool) {
	var vals [MaxArgs]fval
	if !p.readChecked(req, paths, &vals) {
		vals = [MaxArgs]fval{}
		args, err := req.Arguments()
		if err != nil || !p.read(args, paths, &vals) {
			return 0, false
		}
	}
	return p.decide(&vals)
}

// ReadsChecked reports whether Decide reads req's arguments through
// [tool.AccessRequest.Argument], without their JSON.
func (p *Program) ReadsChecked(req *tool.AccessRequest, paths map[string]bool) bool {
	var vals [MaxArgs]fval
	return p.readChecked(req, paths, &vals)
}

// IsContextArgs reports whether n is context.args.
func IsContextArgs(n ast.IsNode) bool {
	acc, ok := n.(ast.NodeTypeAccess)
	if !ok || acc.Value != "args" {
		return false
	}
	v, ok := acc.Arg.(ast.NodeTypeVariable)
	return ok && v.Name == "context"
}

func (p *Program) slot(name string) (int, bool) {
	for i, n := range p.names {
		if n == name {
			return i, true
		}
	}
	if len(p.names) == MaxArgs {
		return 0, false
	}
	p.names = append(p.names, name)
	return len(p.names) - 1, true
}

func litOf(v cedar.Value) (fval, bool) {
	switch v := v.(type) {
	case cedar.String:
		return fval{k: fString, s: string(v)}, true
	case cedar.Long:
		return fval{k: fLong, n: int64(v)}, true
	case cedar.Boolean:
		return fval{k: fBool, b: bool(v)}, true
	case cedar.Set:
		var members []fval
		for e := range v.All() {
			ev, ok := litOf(e)
			if !ok || !ev.scalar() {
				return fval{}, false
			}
			members = append(members, ev)
		}
		return fval{k: fSet, set: &members}, true
	}
	return fval{}, false
}

func (p *Program) compile(n ast.IsNode) (fnode, bool) {
	bin := func(op fop, b ast.BinaryNode) (fnode, bool) {
		l, ok := p.compile(b.Left)
		if !ok {
			return fnode{}, false
		}
		r, ok := p.compile(b.Right)
		if !ok {
			return fnode{}, false
		}
		return fnode{op: op, kids: []fnode{l, r}}, true
	}
	switch n := n.(type) {
	case ast.NodeValue:
		v, ok := litOf(n.Value)
		return fnode{op: opLit, lit: v}, ok
	case ast.NodeTypeAccess:
		if !IsContextArgs(n.Arg) {
			return fnode{}, false
		}
		s, ok := p.slot(string(n.Value))
		return fnode{op: opArg, slot: s}, ok
	case ast.NodeTypeHas:
		if !IsContextArgs(n.Arg) {
			return fnode{}, false
		}
		s, ok := p.slot(string(n.Value))
		return fnode{op: opHas, slot: s}, ok
	case ast.NodeTypeAnd:
		return bin(opAnd, n.BinaryNode)
	case ast.NodeTypeOr:
		return bin(opOr, n.BinaryNode)
	case ast.NodeTypeNot:
		a, ok := p.compile(n.Arg)
		return fnode{op: opNot, kids: []fnode{a}}, ok
	case ast.NodeTypeIfThenElse:
		c, ok1 := p.compile(n.If)
		t, ok2 := p.compile(n.Then)
		e, ok3 := p.compile(n.Else)
		return fnode{op: opIf, kids: []fnode{c, t, e}}, ok1 && ok2 && ok3
	case ast.NodeTypeEquals:
		return bin(opEq, n.BinaryNode)
	case ast.NodeTypeNotEquals:
		return bin(opNe, n.BinaryNode)
	case ast.NodeTypeLessThan:
		return bin(opLt, n.BinaryNode)
	case ast.NodeTypeLessThanOrEqual:
		return bin(opLe, n.BinaryNode)
	case ast.NodeTypeGreaterThan:
		return bin(opGt, n.BinaryNode)
	case ast.NodeTypeGreaterThanOrEqual:
		return bin(opGe, n.BinaryNode)
	case ast.NodeTypeLike:
		a, ok := p.compile(n.Arg)
		return fnode{op: opLike, like: compileLike(n.Value), kids: []fnode{a}}, ok
	case ast.NodeTypeContains:
		return bin(opContains, n.BinaryNode)
	case ast.NodeTypeExtensionCall:
		// Partial evaluation puts an error it found where the expression
		// that failed was: a call that reaches it is Cedar's to decide.
		if _, isErr := eval.ToPartialError(n); isErr {
			return fnode{op: opError}, true
		}
	}
	return fnode{}, false
}

// test evaluates n where Cedar requires a boolean: b is n's value, and
// ok is false when Cedar must decide or the value is not a boolean. It
// is eval followed by that check, without copying values for the
// operations that give booleans.
func (n *fnode) test(args *[MaxArgs]fval) (b, ok bool) {
	switch n.op {
	case opHas:
		switch args[n.slot].k {
		case fAbsent:
			return false, true
		case fOther:
			return false, false // a number Cedar may leave out
		}
		return true, true
	case opAnd, opOr:
		l, ok := n.kids[0].test(args)
		if !ok {
			return false, false
		}
		if l == (n.op == opOr) {
			return l, true // short circuit, as Cedar
		}
		return n.kids[1].test(args)
	case opNot:
		a, ok := n.kids[0].test(args)
		if !ok {
			return false, false
		}
		return !a, true
	case opLike:
		if k := &n.kids[0]; k.op == opArg {
			// eval of k, then like's check that it is a string: an
			// argument that is not a string is Cedar's to decide.
			v := &args[k.slot]
			if v.k != fString {
				return false, false
			}
			return n.like.match(v.s), true
		}
		a, ok := n.kids[0].eval(args)
		if !ok || a.k != fString {
			return false, false
		}
		return n.like.match(a.s), true
	}
	v, ok := n.eval(args)
	if !ok || v.k != fBool {
		return false, false
	}
	return v.b, true
}

// eval evaluates n on the arguments; ok is false when Cedar must decide.
func (n *fnode) eval(args *[MaxArgs]fval) (fval, bool) {
	switch n.op {
	case opLit:
		return n.lit, true
	case opError:
		return fval{}, false
	case opArg:
		v := args[n.slot]
		if !v.scalar() { // absent: Cedar's error; other: not modelled
			return fval{}, false
		}
		return v, true
	case opHas, opAnd, opOr, opNot, opLike:
		b, ok := n.test(args)
		if !ok {
			return fval{}, false
		}
		return fval{k: fBool, b: b}, true
	case opIf:
		c, ok := n.kids[0].test(args)
		if !ok {
			return fval{}, false
		}
		if c {
			return n.kids[1].eval(args)
		}
		return n.kids[2].eval(args)
	}
	l, ok := n.kids[0].eval(args)
	if !ok {
		return fval{}, false
	}
	r, ok := n.kids[1].eval(args)
	if !ok || !r.scalar() {
		return fval{}, false
	}
	switch n.op {
	case opContains:
		if l.k != fSet {
			return fval{}, false
		}
		for _, e := range *l.set {
			if e.equal(r) {
				return fval{k: fBool, b: true}, true
			}
		}
		return fval{k: fBool}, true
	case opEq, opNe:
		if !l.scalar() {
			return fval{}, false
		}
		return fval{k: fBool, b: l.equal(r) == (n.op == opEq)}, true
	}
	// Ordering: only longs are modelled (Cedar also orders datetimes,
	// durations and decimals, which the fast path never holds).
	if l.k != fLong || r.k != fLong {
		return fval{}, false
	}
	var b bool
	switch n.op {
	case opLt:
		b = l.n < r.n
	case opLe:
		b = l.n <= r.n
	case opGt:
		b = l.n > r.n
	default:
		b = l.n >= r.n
	}
	return fval{k: fBool, b: b}, true
}

// read reads the arguments p reads from args, a JSON object, as
// ArgsRecord would make them (path arguments cleaned), checking the
// others as selectArgs does. ok is false when Cedar must decide: args is
// not an object, is malformed, repeats an argument p reads, or holds a
// number that may not be a whole Long in an argument the verdict's
// policies read (p's or p.unread), which decideCedar refuses or reads.
func (p *Program) read(args []byte, paths map[string]bool, out *[MaxArgs]fval) bool {
	ps := argParser{b: args}
	ps.space()
	if ps.i == len(ps.b) {
		return true // no arguments: an empty record
	}
	if ps.b[ps.i] != '{' {
		return false
	}
	ps.i++
	ps.space()
	if ps.i < len(ps.b) && ps.b[ps.i] == '}' {
		ps.i++
		ps.space()
		return ps.i == len(ps.b)
	}
	var seen [MaxArgs]bool
	for {
		ps.space()
		key, escaped, err := ps.rawStr()
		if err != nil {
			return false
		}
		ps.space()
		if ps.i >= len(ps.b) || ps.b[ps.i] != ':' {
			return false
		}
		ps.i++
		slot := p.slotOf(key, escaped)
		if slot < 0 {
			odd := ps.odd
			if ps.skip(1) != nil {
				return false
			}
			if ps.odd && !odd && !p.readsAll && !wanted(key, escaped, p.unread) {
				ps.odd = false // a number no policy that may apply reads
			}
		} else {
			if seen[slot] {
				return false
			}
			seen[slot] = true
			v, ok := ps.fastValue()
			if !ok {
				return false
			}
			if v.k == fString && paths[p.names[slot]] {
				if v.s, err = CleanPath(v.s); err != nil {
					return false // Cedar's path gives the refusal
				}
			}
			out[slot] = v
		}
		ps.space()
		if ps.i >= len(ps.b) {
			return false
		}
		if ps.b[ps.i] == '}' {
			ps.i++
			ps.space()
			// A number that may not be a whole Long, read or not: the
			// policies may read it, and Cedar's path says whether.
			return ps.i == len(ps.b) && !ps.odd
		}
		if ps.b[ps.i] != ',' {
			return false
		}
		ps.i++
	}
}

// readChecked reads the arguments p reads through req.Argument, as read
// would make them from req's JSON. It reports false when Argument
// declines one of them or another argument the verdict's policies read
// (p.unread: Argument never holds a number that is not a whole Long), or when
// p reads none (then only read checks the JSON); the caller then reads
// them with read.
func (p *Program) readChecked(req *tool.AccessRequest, paths map[string]bool, out *[MaxArgs]fval) bool {
	if len(p.names) == 0 || p.readsAll {
		return false
	}
	for _, name := range p.unread {
		if _, ok := req.Argument(name); !ok {
			return false
		}
	}
	for slot, name := range p.names {
		v, ok := req.Argument(name)
		if !ok {
			return false
		}
		switch v.Kind {
		case tool.ArgumentAbsent:
			out[slot] = fval{k: fAbsent}
		case tool.ArgumentString:
			if paths[name] {
				var err error
				if v.String, err = CleanPath(v.String); err != nil {
					return false // Cedar's path gives the refusal
				}
			}
			out[slot] = fval{k: fString, s: v.String}
		case tool.ArgumentInt64:
			out[slot] = fval{k: fLong, n: v.Int64}
		case tool.ArgumentBool:
			out[slot] = fval{k: fBool, b: v.Bool}
		default:
			return false
		}
	}
	return true
}

// slotOf returns the slot of the argument whose JSON-quoted key is key,
// or -1.
func (p *Program) slotOf(key []byte, escaped bool) int {
	k := key[1 : len(key)-1]
	if escaped {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return -1
		}
		k = []byte(s)
	}
	for i, n := range p.names {
		if string(k) == n {
			return i
		}
	}
	return -1
}

// fastValue reads one member's value as argParser.value does at depth 1.
func (p *argParser) fastValue() (fval, bool) {
	p.space()
	if p.i >= len(p.b) {
		return fval{}, false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		s, err := p.str()
		if err != nil {
			return fval{}, false
		}
		return fval{k: fString, s: s}, true
	case c == 't' && p.lit("true"):
		return fval{k: fBool, b: true}, true
	case c == 'f' && p.lit("false"):
		return fval{k: fBool}, true
	case c == 'n' && p.lit("null"):
		return fval{k: fAbsent}, true // left out of the record
	case c == '-' || c >= '0' && c <= '9':
		odd := p.odd
		lit, err := p.number()
		if err != nil {
			return fval{}, false
		}
		if n, whole, _ := wholeNumber(lit); whole {
			p.odd = odd // 2.0 and 1e3 are Longs to Cedar too
			return fval{k: fLong, n: n}, true
		}
		return fval{k: fOther}, true // and p.odd is set
	}
	if p.skip(1) != nil {
		return fval{}, false
	}
	return fval{k: fOther}, true
}

// decide decides a call from its arguments as Cedar would over the
// verdict's rules: bit i of the result is set when rule i applies. ok is
// false when Cedar must decide.
func (p *Program) decide(args *[MaxArgs]fval) (applied uint64, ok bool) {
	for i := range p.rules {
		fr := &p.rules[i]
		applies := true
		for j := range fr.conds {
			c := &fr.conds[j]
			b, ok := c.body.test(args)
			if !ok {
				return 0, false
			}
			if b != c.when {
				applies = false
				break
			}
		}
		if applies {
			applied |= 1 << i
		}
	}
	return applied, true
}

// IDs returns the ids of the rules in set, in order. A single rule's is
// shared: the caller copies it before handing it on.
func (p *Program) IDs(set uint64) []string {
	if set&(set-1) == 0 {
		return p.rules[bits.TrailingZeros64(set)].id
	}
	var ids []string
	for i := range p.rules {
		if set&(1<<i) != 0 {
			ids = append(ids, p.rules[i].id[0])
		}
	}
	return ids
}
