// Package recost bounds what a Go regular expression costs before it is
// compiled, for patterns that come from someone not trusted (a schema from
// a remote server, a model's search).
//
// A pattern's text says little about its cost: a counted repetition is
// expanded when the program is built, so the 12 bytes [a-z]{1000}x become
// a program of about a thousand instructions, and (?:…250 bytes…){1000}
// one of a quarter of a million (about 27 MB, built in a fifth of a
// second). Matching costs, for each byte of input, up to one step per
// instruction the matcher tracks, so the same 12 bytes matched against
// 1 MB of letters take about 10^9 steps. Insts estimates the program's
// size from the parsed pattern without building it, and Span bounds how
// much of the input a match anchored at the start can read.
package recost

import (
	"regexp/syntax"
	"unicode/utf8"
)

// Insts returns an upper bound on the number of instructions of the
// program Go's regexp package compiles re into, or limit+1 when that
// bound is larger than limit. It walks re once, without expanding it;
// re must come from syntax.Parse (which bounds its nesting).
func Insts(re *syntax.Regexp, limit int) int {
	n := insts(re, limit) + 2 // and the program's fail and match
	if n > limit {
		return limit + 1
	}
	return n
}

func insts(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpCapture:
		return sat(2 + insts(re.Sub[0], limit))
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(2 + insts(re.Sub[0], limit))
	case syntax.OpRepeat:
		// x{n,m} becomes n copies of x and m-n nested optional ones;
		// x{n,} n copies and a star.
		count := re.Max
		if count < 0 {
			count = re.Min + 1
		}
		sub := insts(re.Sub[0], limit)
		if count > 0 && sub+2 > (limit+1)/count {
			return limit + 1
		}
		return sat(count*(sub+2) + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		n := 1
		for _, s := range re.Sub {
			n = sat(n + insts(s, limit) + 1)
		}
		return n
	}
	return 1 // a class, any character, an empty-width assertion, empty, no match
}

// Span reports, for a pattern that can match only at the start of the
// text (it begins with \A, or with ^ outside multi-line mode, before any
// alternation), the most bytes a match can read, and ok; ok is false for
// any other pattern and for one whose matches have no longest (a star, a
// plus, an open repetition). Go's matchers stop reading the input once a
// match anchored at the start can no longer be extended, so such a
// pattern reads at most span+1 bytes of any input. Spans over limit are
// reported as limit+1.
func Span(re *syntax.Regexp, limit int) (span int, ok bool) {
	if !startAnchored(re) {
		return 0, false
	}
	n := maxLen(re, limit)
	if n < 0 {
		return 0, false
	}
	return n, true
}

// startAnchored mirrors what the compiled program's start condition
// sees: \A reached from the start through concatenations and groups.
func startAnchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && startAnchored(re.Sub[0])
	case syntax.OpCapture:
		return startAnchored(re.Sub[0])
	}
	return false
}

// maxLen returns the most bytes a match of re can span, at most limit+1,
// or -1 when there is no most.
func maxLen(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return sat(utf8.UTFMax * len(re.Rune)) // a folded rune may be longer
		}
		n := 0
		for _, r := range re.Rune {
			l := utf8.RuneLen(r)
			if l < 0 {
				l = utf8.UTFMax
			}
			n += l
		}
		return sat(n)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0], limit)
	case syntax.OpStar, syntax.OpPlus:
		return -1
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		sub := maxLen(re.Sub[0], limit)
		if sub < 0 {
			return -1
		}
		if re.Max > 0 && sub > (limit+1)/re.Max {
			return limit + 1
		}
		return sat(re.Max * sub)
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s, limit)
			if m < 0 {
				return -1
			}
			n = sat(n + m)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s, limit)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	}
	return 0 // empty-width assertions, empty, no match
}

// PikeSteps counts the work of searching s with prog the way Go's NFA
// matcher does (a Pike VM, which Go runs on inputs too long for its
// other matchers): one step for each thread added or advanced at each
// position. It reads until no thread is left or s ends, and does not stop
// at a match. It measures matching work without a clock, for tests and
// measurements; prog must come from syntax.Compile.
func PikeSteps(prog *syntax.Prog, s string) int {
	anchored := prog.StartCond()&syntax.EmptyBeginText != 0
	steps := 0
	on := make([]int, len(prog.Inst)) // position+1 a pc was last added at
	var add func(list []uint32, pc uint32, pos int, ctx syntax.EmptyOp) []uint32
	add = func(list []uint32, pc uint32, pos int, ctx syntax.EmptyOp) []uint32 {
		if on[pc] == pos+1 {
			return list
		}
		on[pc] = pos + 1
		steps++
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			list = add(list, in.Out, pos, ctx)
			return add(list, in.Arg, pos, ctx)
		case syntax.InstCapture, syntax.InstNop:
			return add(list, in.Out, pos, ctx)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^ctx == 0 {
				return add(list, in.Out, pos, ctx)
			}
			return list
		}
		return append(list, pc)
	}
	var cur []uint32
	prev := rune(-1)
	for pos := 0; pos <= len(s); {
		r, w := rune(-1), 0
		if pos < len(s) {
			r, w = utf8.DecodeRuneInString(s[pos:])
		}
		if !anchored || pos == 0 {
			cur = add(cur, uint32(prog.Start), pos, syntax.EmptyOpContext(prev, r))
		}
		if len(cur) == 0 || w == 0 {
			break
		}
		next := rune(-1)
		if pos+w < len(s) {
			next, _ = utf8.DecodeRuneInString(s[pos+w:])
		}
		var list []uint32
		for _, pc := range cur {
			steps++
			if in := &prog.Inst[pc]; in.Op != syntax.InstMatch && in.MatchRune(r) {
				list = add(list, in.Out, pos+w, syntax.EmptyOpContext(r, next))
			}
		}
		cur, prev, pos = list, r, pos+w
	}
	return steps
}
