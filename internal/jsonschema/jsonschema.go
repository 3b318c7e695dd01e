// Package jsonschema compiles JSON Schema (draft 2020-12) documents and
// validates JSON arguments against them, reporting every violation in
// words a language model can act on.
//
// # What is supported
//
// Compile accepts the assertion and applicator keywords of draft 2020-12:
// type, enum, const, the object keywords (properties, required,
// additionalProperties, patternProperties, propertyNames, minProperties,
// maxProperties, dependentRequired, dependentSchemas), the array keywords
// (prefixItems, items, minItems, maxItems, uniqueItems, contains,
// minContains, maxContains), the string keywords (minLength and maxLength
// in Unicode code points, pattern, format), the numeric keywords (minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, multipleOf), allOf, anyOf,
// oneOf, not, if/then/else, boolean schemas, $defs, $id (in subschemas
// too: each starts a resource with its own base URI), $anchor and
// $dynamicAnchor, and references ($ref to "#", to a JSON pointer such as
// "#/$defs/Item", to an anchor, to an embedded resource, or to a schema
// registered in advance in Options.Resources). Draft 7 spellings that mean the same thing are accepted too:
// definitions, dependencies, items as an array with additionalItems, and
// draft 4 boolean exclusiveMinimum/exclusiveMaximum.
//
// Numbers are compared exactly, on their decimal text: 1.0 equals 1, 0.1
// is a multiple of 0.01, and 1e400 is greater than any maximum that fits
// in a float64.
//
// Patterns are JavaScript (ECMA-262) regular expressions, as JSON Schema
// says, translated to Go's RE2 syntax: \uXXXX, \u{X...} and \cX become
// \x{...}; \p{…} with a General_Category or Script (long or short
// names, gc= and sc= prefixes) becomes RE2's \p{…}; \s and \S become
// JavaScript's classes, which unlike RE2's include vertical tab and the
// Unicode spaces (U+00A0, U+2000–U+200A, U+3000, U+FEFF, ...). \d, \w
// and \b are ASCII in both. Lookaheads right after a leading ^ (zod's
// email pattern starts ^(?!\.)(?!.*\.\.)) and lookbehinds right before a
// final $ are checked as patterns of their own at that end of the string,
// when the rest has no top-level alternation. Other lookaround,
// backreferences and other Unicode properties cannot be expressed in RE2.
// With Compile such a pattern is a compile error naming it.
//
// With Compile, the formats date-time, date, time, email (a simple check),
// uuid, ipv4, ipv6 and uri (absolute) are asserted; other formats are
// annotations.
//
// Annotations (title, description, examples, deprecated, readOnly, ...)
// and unknown keywords are ignored. $recursiveRef (draft 2019-09) is a
// compile error.
//
// # Schemas from elsewhere
//
// CompileWith reads schemas written elsewhere, such as those of tools
// imported from MCP servers. With the zero Options it follows the draft
// 2020-12 defaults: format is an annotation (Options.AssertFormat makes it
// an assertion), and a pattern that cannot be translated to RE2 is
// ignored rather than refused: the schema compiles and Schema.Ignored
// reports the keyword and why. When a patternProperties pattern is
// ignored, so are patternProperties and additionalProperties of that
// schema, since which keys they cover is unknown.
//
// Schemas are never fetched. A reference resolves within the document
// (embedded $id resources included) or to a schema the host registered
// in advance with Resources.Add; any other is a compile error that says
// so. Bundle embeds the registered schemas a document uses, making it
// whole for programs that only see the document.
//
// The keywords unevaluatedProperties and unevaluatedItems, $dynamicRef,
// a reference to a standard meta-schema and a custom meta-schema in
// $schema are evaluated by santhosh-tekuri/jsonschema (v6, draft 2020-12)
// instead of this package's validator, for the whole schema that uses
// them. Compile still reads such a schema itself and applies the same
// bounds (size, reference cycles, growth with the depth of the value,
// counting each $dynamicRef as the largest of its possible targets).
// Validate still parses the instance strictly within Limits first; since
// the external validator has no work budget of its own, Validate refuses
// with ErrTooComplex, before it starts, an instance whose values times the
// most subschemas Compile found can apply to one value exceed a budget
// (2^18 applications plus 16 per value, so a schema that applies at most
// 16 subschemas to a value takes instances of any size), or whose numbers
// add up to more than 65,536 digits and exponent magnitudes. Violations keep this
// package's form (pointer, expected, got) and MaxViolations, and a
// property that fails its own schema is not also reported as
// unevaluated. Such a schema adds no defaults; with CaseSensitive, a key is
// checked against every property name the schema declares, since which
// schema applies to which object is only known to the external validator.
//
// Compile and CompileWith pass every required test of the official
// JSON-Schema-Test-Suite for draft 2020-12.
//
// # Hostile schemas
//
// Schemas may come from remote servers. Compile bounds the document's
// size (MaxSchemaBytes), nesting (MaxSchemaDepth), number of values and
// pattern lengths, and refuses $ref cycles that would apply schemas to the
// same value forever. Validate bounds its work by the size of the
// instance (ErrTooComplex) and never recurses deeper than the instance's
// nesting allows.
//
// # Reports
//
// Validate reports every violation (up to MaxViolations) in document
// order: the JSON pointer of the value, what the schema allows in plain
// words, what came, and sometimes a hint such as a close property name. A
// failed anyOf or oneOf is one violation: that of the alternative the
// value was plausibly meant for, or a summary of the alternatives.
//
// # Defaults
//
// When an instance is valid, Validate adds the default of every missing
// property whose schema has one, in every object of the instance reached
// through properties, items, prefixItems, $ref, allOf, the taken if
// branch and the matching anyOf or oneOf alternative. It returns compact
// JSON that keeps the original key order with the defaults appended at
// the end of each object. Defaults that fail their own schema are ignored,
// and none are added if together they would make the instance invalid.
// When Limits.MaxBytes is set and the instance with its defaults would be
// longer, Validate reports that as a violation instead.
package jsonschema

import santhosh "github.com/santhosh-tekuri/jsonschema/v6"

// Limits bound the input a Validate call accepts.
type Limits struct {
	MaxBytes int // 0 means no limit
	MaxDepth int // 0 means 64
}

// A Violation is one way in which an instance fails a schema.
type Violation struct {
	Pointer  string // JSON pointer of the instance location, "" for the root
	Expected string // what the schema allows, in plain words
	Got      string // what came, shortened
	Hint     string // optional suggestion
}

// String formats v on one line, as "/from: expected …, got …".
func (v Violation) String() string {
	s := pointerOrRoot(v.Pointer) + ": expected " + v.Expected + ", got " + v.Got
	if v.Hint != "" {
		s += " (" + v.Hint + ")"
	}
	return s
}

// A Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	root         *node
	defaults     bool // some schema has a default
	defaultBytes int  // see DefaultBytes
	// Locations of the schemas whose default passes them: see DefaultValid.
	validDefaults map[string]bool
	fold          bool // see CaseSensitive
	ext           *santhosh.Schema
	// For ext: the most schemas applied to one value, and the patterns.
	extFanout   float64
	extPatterns int   // the patterns, each weighed by extPatternWeight
	extNames    *node // every property name, for CaseSensitive
	ignored     []*SchemaError
}

// DefaultBytes returns the total length of the compact JSON of the
// defaults Validate may add (those that pass their own schema), each
// counted once. A default reached through items may be added once per
// item; Validate bounds that with Limits.MaxBytes.
func (s *Schema) DefaultBytes() int { return s.defaultBytes }

// DefaultValid reports whether the schema written at the JSON pointer ptr
// of the document (such as "/properties/a" or "/$defs/T/properties/b",
// "" for the root) has a "default" of its own that passes that schema,
// references in it included: exactly the defaults Validate adds. It is
// false when there is no schema at ptr, when it has no default or its
// default fails it, and for a schema evaluated by the external validator,
// which adds no defaults.
func (s *Schema) DefaultValid(ptr string) bool { return s.validDefaults[ptr] }

// Ignored returns the keywords of the schema that Compile could not honour
// and ignores, such as a pattern that cannot be translated to RE2, each
// with its location and the reason. It is empty for most schemas.
func (s *Schema) Ignored() []*SchemaError { return s.ignored }

// CaseSensitive returns a copy of s whose Validate also rejects an object
// key that is not a declared property (nor matched by patternProperties)
// but equals one when case is ignored, such as "PATH" where the schema
// declares "path". JSON Schema allows such a key unless
// additionalProperties forbids it, but decoders that match names without
// regard to case (encoding/json) would bind it to the declared field, so
// a permission check on the declared name and the tool could see
// different values.
func (s *Schema) CaseSensitive() *Schema {
	c := *s
	c.fold = true
	return &c
}
