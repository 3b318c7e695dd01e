package jsonschema

import "regexp"

// A Charged is a Go regular expression (RE2 syntax, as regexp.Compile
// reads it) from source text a program fixes, a struct tag's pattern,
// with what matching it costs by the rules a schema's pattern is charged
// by: a fixed cost, plus for each byte read the larger of the pattern's
// length and its program's size, over constants.
type Charged struct {
	p *pattern
}

// CompileCharged compiles src as regexp.Compile does. Like a schema's
// pattern, one whose program would hold more than 16,384 instructions is
// refused before it is built (a counted repetition makes the 12 bytes
// [a-z]{1000}! a program of thousands).
func CompileCharged(src string) (*Charged, error) {
	p, err := (&patternText{core: src}).compile(src)
	if err != nil {
		return nil, err
	}
	return &Charged{p: p}, nil
}

// Regexp returns the compiled expression.
func (c *Charged) Regexp() *regexp.Regexp { return c.p.re }

// Work returns the steps matching c against n bytes costs.
func (c *Charged) Work(n int) int { return matchWork(c.p, n) }

// Budget returns the steps of work checking an instance of n tokens (or
// any larger count of its parts, such as its bytes) may take, as Validate
// allows it.
func Budget(n int) int { return baseSteps + stepsPerNode*n }
