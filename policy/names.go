package policy

import (
	"fmt"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// entityTypes are the entity types an Authorizer makes: a name of any
// other type never matches anything.
var entityTypes = map[types.EntityType]bool{"User": true, "Role": true, "Anonymous": true, "Action": true, "Tool": true}

// actions are the actions an Authorizer decides.
var actions = map[types.String]bool{"call": true, "approve": true, "approveOwn": true}

// unknownName returns why a policy names an entity type the Authorizer
// never makes (role::"x", a namespace) or an action it never decides
// (Action::"Call"), anywhere in its scope or conditions, or "". Such a
// name never matches: in a forbid, the forbid would be silently dead.
func unknownName(p *ast.Policy) string {
	why := ""
	typ := func(t types.EntityType) {
		if why == "" && !entityTypes[t] {
			why = fmt.Sprintf("entity type %s is none the permissions make (User, Role, Anonymous, Action, Tool), so it never matches", t)
		}
	}
	uid := func(u types.EntityUID) {
		if typ(u.Type); why != "" {
			why = fmt.Sprintf("%s: %s", u, why)
			return
		}
		if u.Type == "Action" && !actions[u.ID] {
			why = fmt.Sprintf("%s is no action the permissions decide (Action::\"call\", Action::\"approve\", Action::\"approveOwn\"), so it never matches", u)
		}
	}
	var value func(v cedar.Value, depth int)
	value = func(v cedar.Value, depth int) {
		if depth > 64 {
			return // the parser's bounds keep literals shallower
		}
		switch v := v.(type) {
		case types.EntityUID:
			uid(v)
		case types.Set:
			for e := range v.All() {
				value(e, depth+1)
			}
		case types.Record:
			for _, e := range v.All() {
				value(e, depth+1)
			}
		}
	}
	for _, s := range []ast.IsScopeNode{p.Principal, p.Action, p.Resource} {
		switch s := s.(type) {
		case ast.ScopeTypeEq:
			uid(s.Entity)
		case ast.ScopeTypeIn:
			uid(s.Entity)
		case ast.ScopeTypeInSet:
			for _, e := range s.Entities {
				uid(e)
			}
		case ast.ScopeTypeIs:
			typ(s.Type)
		case ast.ScopeTypeIsIn:
			typ(s.Type)
			uid(s.Entity)
		}
	}
	for _, cond := range p.Conditions {
		ast.Inspect(ast.NewNode(cond.Body), func(n ast.IsNode) bool {
			switch n := n.(type) {
			case ast.NodeValue:
				value(n.Value, 0)
			case ast.NodeTypeIs:
				typ(n.EntityType)
			case ast.NodeTypeIsIn:
				typ(n.EntityType)
			}
			return why == ""
		})
	}
	return why
}
