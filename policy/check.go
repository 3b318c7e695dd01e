package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// Schema returns the Cedar schema of calls to t, in Cedar's schema
// syntax: the User, Role, Anonymous and Tool entity types, the call
// action whose context.args is t's arguments as a Cedar record, and the
// approve and approveOwn actions of [Authorizer.MayAnswer]. JSON
// Schema types map to Cedar types: string to String, integer and number
// to Long (what the policies see of a number, see [Authorizer]), boolean
// to Bool, an array with typed items to a Set, an object with properties
// to a record; a property is required when the schema requires it or
// gives it a default. Properties of other types (any, unions) are left
// out, so a condition on them fails the check.
// principalAttrs is the body of the User entity's record, such as
// `tenant?: String`; empty means no attributes.
func Schema(t tool.Tool, principalAttrs string) string {
	var b strings.Builder
	b.WriteString("entity Role in [Role];\n")
	fmt.Fprintf(&b, "entity User in [Role] { %s };\n", principalAttrs)
	b.WriteString("entity Anonymous;\n")
	b.WriteString("entity Tool { name: String, title: String, readOnly: Bool, destructive: Bool, idempotent: Bool, openWorld: Bool };\n")
	b.WriteString("action call appliesTo { principal: [User, Anonymous], resource: [Tool], context: { args: ")
	var s jsonSchema
	_ = json.Unmarshal(t.Parameters(), &s)
	args := cedarRecord(&s, 0)
	b.WriteString(args)
	b.WriteString(", now: datetime, hour: Long } };\n")
	// Who may answer an approval request (see Authorizer.MayAnswer). Its
	// context has the call's args too, so that a policy for any action
	// checks as it did before these actions: such a policy never decides
	// an answer, and one that names them and reads args refuses it.
	b.WriteString("action approve, approveOwn appliesTo { principal: [User], resource: [Tool], context: { args: ")
	b.WriteString(args)
	b.WriteString(", requester: String, now: datetime, hour: Long } };\n")
	return b.String()
}

// jsonSchema is the part of a JSON Schema the Cedar schema is made from.
type jsonSchema struct {
	Type       json.RawMessage        `json:"type"`
	Properties map[string]*jsonSchema `json:"properties"`
	Required   []string               `json:"required"`
	Items      *jsonSchema            `json:"items"`
	Default    json.RawMessage        `json:"default"`
}

func (s *jsonSchema) typeName() string {
	var t string
	if json.Unmarshal(s.Type, &t) == nil {
		return t
	}
	var ts []string // ["string","null"]: a nullable value is a value or absent
	if json.Unmarshal(s.Type, &ts) == nil {
		ts = slices.DeleteFunc(ts, func(t string) bool { return t == "null" })
		if len(ts) == 1 {
			return ts[0]
		}
	}
	return ""
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cedarType returns s as a Cedar type, or "" when Cedar cannot type it.
func cedarType(s *jsonSchema, depth int) string {
	if s == nil || depth > residual.MaxDepth {
		return ""
	}
	switch s.typeName() {
	case "string":
		return "String"
	case "integer", "number":
		return "Long"
	case "boolean":
		return "Bool"
	case "array":
		if it := cedarType(s.Items, depth+1); it != "" {
			return "Set<" + it + ">"
		}
	case "object":
		if s.Properties != nil {
			return cedarRecord(s, depth)
		}
	}
	return ""
}

func cedarRecord(s *jsonSchema, depth int) string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var fields []string
	for _, n := range names {
		p := s.Properties[n]
		typ := cedarType(p, depth+1)
		if typ == "" {
			continue
		}
		name := n
		if !identifier.MatchString(n) {
			q, _ := json.Marshal(n)
			name = string(q)
		}
		opt := "?"
		if slices.Contains(s.Required, n) || len(p.Default) > 0 && string(p.Default) != "null" {
			opt = ""
		}
		fields = append(fields, name+opt+": "+typ)
	}
	return "{ " + strings.Join(fields, ", ") + " }"
}

// A Problem is one thing [Check] found wrong with a policy.
type Problem struct {
	// Policy is the id of the policy (its @id, else policyN by position).
	Policy string
	// Line is the policy's line in its file.
	Line int
	// Tool names the tool the problem shows with, if one.
	Tool string
	// Message says what is wrong.
	Message string
	// Warning marks a problem that cannot let a call through that the
	// policy means to refuse, only refuse calls the tool accepts: a
	// comparison on a number that may not be a whole number in 64 bits,
	// or on an argument whose schema gives it no single type, which
	// fails at run time for some values, and a policy that fails refuses
	// the call; and a comparison with ==, != or as an element of
	// contains, containsAll or containsAny of a value that may hold a
	// list, which refuses calls with a list of two or more values there. The other problems are errors: the policy does not say
	// what it seems to.
	Warning bool
}

func (p Problem) String() string {
	s := fmt.Sprintf("line %d: policy %s: ", p.Line, p.Policy)
	if p.Tool != "" {
		s += "for tool " + p.Tool + ": "
	}
	if p.Warning {
		s += "warning: "
	}
	return s + p.Message
}

// Check parses the policies in src and validates them against the Cedar
// schema of each tool (see [Schema]) they may apply to: a policy whose
// resource is Tool::"x" against x's, any other against every tool's. It
// reports a policy that names a tool tools lacks, and any condition Cedar
// cannot type: an argument the tool does not have, or one compared as the
// wrong type. A condition on an argument only some tools have must guard
// it with has. It also reports a permit shadowed by a forbid without
// conditions whose scope covers the permit's. These are errors. It warns
// (Problem.Warning) of a policy that reads an argument whose schema type
// is number (a value such as 150.5 or 1e300 refuses the call when the
// policy may apply to it) or that has no single type (a value of another
// type than the policy expects makes it fail, which refuses the call), and
// of a policy that compares a value that may hold a list (a list of two or
// more values there refuses the call, see [Authorizer]). A parse error is
// returned as the error.
func Check(name string, src []byte, tools []tool.Tool, principalAttrs string) ([]Problem, error) {
	// The attributes go into the schema Cedar parses, with the bounds of
	// a policy's text (cedar-go's schema parser recurses per level too).
	if err := checkSource("principal attributes", []byte(principalAttrs)); err != nil {
		return nil, err
	}
	c, err := compile(name, src)
	if err != nil {
		return nil, err
	}
	byName := map[string]tool.Tool{}
	for _, t := range tools {
		byName[t.Name()] = t
	}
	validators := map[string]*validate.Validator{}
	validator := func(t tool.Tool) (*validate.Validator, error) {
		if v, ok := validators[t.Name()]; ok {
			return v, nil
		}
		var s schema.Schema
		if err := s.UnmarshalCedar([]byte(Schema(t, principalAttrs))); err != nil {
			return nil, err
		}
		rs, err := s.Resolve()
		if err != nil {
			return nil, err
		}
		v := validate.New(rs)
		validators[t.Name()] = v
		return v, nil
	}
	var problems []Problem
	for _, r := range c.rules {
		line := r.p.Position().Line
		targets := tools
		if r.only != "" {
			t, ok := byName[r.only]
			if !ok {
				problems = append(problems, Problem{Policy: string(r.id), Line: line, Message: fmt.Sprintf("no tool is named %q", r.only)})
				continue
			}
			targets = []tool.Tool{t}
		}
		seen := map[string]bool{}
		for _, t := range targets {
			for _, w := range append(numberWarnings(r, t), listWarnings(r, t)...) {
				if !seen[w] {
					seen[w] = true
					problems = append(problems, Problem{Policy: string(r.id), Line: line, Tool: t.Name(), Message: w, Warning: true})
				}
			}
			v, err := validator(t)
			if err != nil {
				problems = append(problems, Problem{Policy: string(r.id), Line: line, Tool: t.Name(), Message: "cannot make a schema: " + err.Error()})
				continue
			}
			if err := v.Policy(string(r.id), r.ast); err != nil {
				for _, e := range strings.Split(err.Error(), "\n") {
					e = strings.TrimPrefix(e, fmt.Sprintf("for policy `%s`, ", r.id))
					if seen[e] && r.only == "" {
						continue // one report per problem for a policy over every tool
					}
					seen[e] = true
					problems = append(problems, Problem{Policy: string(r.id), Line: line, Tool: t.Name(), Message: e})
				}
			}
		}
	}
	problems = append(problems, shadowed(c)...)
	return problems, nil
}

// shadowed reports permits that can never take effect because a forbid
// without conditions covers their whole scope.
func shadowed(c *compiled) []Problem {
	var problems []Problem
	for _, p := range c.rules {
		if p.forbid {
			continue
		}
		for _, f := range c.rules {
			if !f.forbid || len(f.ast.Conditions) > 0 {
				continue
			}
			if covers(f.ast.Principal, p.ast.Principal) && covers(f.ast.Action, p.ast.Action) && covers(f.ast.Resource, p.ast.Resource) {
				problems = append(problems, Problem{Policy: string(p.id), Line: p.p.Position().Line,
					Message: fmt.Sprintf("this permit can never apply: forbid %s (line %d), which has no conditions, covers every call it could allow", f.id, f.p.Position().Line)})
				break
			}
		}
	}
	return problems
}

// covers reports whether every entity scope q matches is matched by
// scope f too, as far as can be told without the entity hierarchy.
func covers(f, q ast.IsScopeNode) bool {
	if _, all := f.(ast.ScopeTypeAll); all {
		return true
	}
	if reflect.DeepEqual(f, q) {
		return true
	}
	if in, ok := f.(ast.ScopeTypeIn); ok {
		switch q := q.(type) {
		case ast.ScopeTypeEq:
			return q.Entity == in.Entity
		case ast.ScopeTypeIsIn:
			return q.Entity == in.Entity
		}
	}
	return false
}

// numberWarnings returns the warnings of a policy's reads of t's
// arguments (context.args.a.b…, not has): one for each top-level
// argument read whose schema holds a JSON number anywhere (the whole
// argument is refused for one such value, see firstInexact), and one for
// each argument read that has no single type.
func numberWarnings(r *rule, t tool.Tool) []string {
	var root jsonSchema
	if json.Unmarshal(t.Parameters(), &root) != nil {
		return nil
	}
	var out []string
	add := func(w string) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, path := range argReads(r.ast) {
		if holds(root.Properties[path[0]], "number", 0) {
			add(fmt.Sprintf("argument %s holds a JSON number: a value that is not a whole number from %d to %d (150.5, 1e300) refuses the call whenever this policy may apply",
				path[0], math.MinInt64, math.MaxInt64))
			continue
		}
		s := &root
		for _, name := range path {
			if s = s.Properties[name]; s == nil {
				break
			}
		}
		if s != nil && cedarType(s, 0) == "" { // nil: not an argument of t, which the validator reports
			add(fmt.Sprintf("argument %s has no single JSON type, so the check cannot type this policy's use of it: a value of a type the policy does not expect makes the policy fail at run time, which refuses the call",
				strings.Join(path, ".")))
		}
	}
	return out
}

// listWarnings returns the warnings of a policy's comparisons (==, !=,
// contains, containsAll, containsAny) of values of t's arguments that
// may hold a list: a call with a list of two or more values where the
// policy compares is refused (see residual.FirstList), since Cedar sees
// a list as a set, without its order or repeats. One for each such top-level
// argument; one for all of them when the policy compares the arguments
// as a whole.
func listWarnings(r *rule, t tool.Tool) []string {
	var root jsonSchema
	if json.Unmarshal(t.Parameters(), &root) != nil {
		return nil
	}
	u := residual.UseOf(r.ast)
	var out []string
	add := func(top string) {
		w := fmt.Sprintf("argument %s may hold a list that this policy compares with ==, != or as an element of contains, containsAll or containsAny: a call with a list of two or more values there is refused whenever this policy may apply (a policy sees a list as a set, without its order or repeats); read the list with contains, containsAll or containsAny instead", top)
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	if u.ComparedAll {
		names := make([]string, 0, len(root.Properties))
		for n := range root.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if holds(root.Properties[n], "array", 0) {
				add(n)
			}
		}
		return out
	}
	for _, path := range u.ComparedPaths {
		s := &root
		for _, st := range path {
			if st.Elems {
				s = s.Items
			} else {
				s = s.Properties[st.Key]
			}
			if s == nil {
				break
			}
		}
		if s != nil && holds(s, "array", 0) { // nil: not an argument of t, which the validator reports
			add(path[0].Key)
		}
	}
	return out
}

// holds reports whether s, or a part of it (a property, the items), has
// the JSON type typ.
func holds(s *jsonSchema, typ string, depth int) bool {
	if s == nil || depth > residual.MaxDepth {
		return false
	}
	if s.typeName() == typ {
		return true
	}
	for _, p := range s.Properties {
		if holds(p, typ, depth+1) {
			return true
		}
	}
	return holds(s.Items, typ, depth+1)
}

// argReads returns the arguments a policy's conditions read, each as the
// path of names after context.args (context.args.order.total is
// [order total]), longest first read, in the order they appear; a has
// test reads nothing.
func argReads(p *ast.Policy) [][]string {
	var out [][]string
	for _, cond := range p.Conditions {
		ast.Inspect(ast.NewNode(cond.Body), func(n ast.IsNode) bool {
			acc, ok := n.(ast.NodeTypeAccess)
			if !ok {
				return true
			}
			var path []string
			var at ast.IsNode = acc
			for {
				a, ok := at.(ast.NodeTypeAccess)
				if !ok {
					return true // not rooted at context.args: look inside
				}
				if residual.IsContextArgs(a) {
					break
				}
				path = append([]string{string(a.Value)}, path...)
				at = a.Arg
			}
			if len(path) > 0 && !slices.ContainsFunc(out, func(q []string) bool { return slices.Equal(q, path) }) {
				out = append(out, path)
			}
			return false
		})
	}
	return out
}
