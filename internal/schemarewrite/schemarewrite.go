// Package schemarewrite holds what the provider adapters' schema
// converters (openaitool's strict subset, geminitool's OpenAPI dialect) do
// alike to a JSON Schema node held as a [jsonobj.Object]: read its types,
// name its children by JSON Pointer, and move what a dialect cannot
// express into the description, where the model still reads it.
//
// Which keywords a dialect keeps, moves or refuses is each adapter's own
// rule and stays there.
package schemarewrite

import (
	"encoding/json"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsonobj"
)

// Types returns the type names of a schema node: the one name of
// "type":"string", the names of "type":["string","null"], and nil when the
// node has no "type" or it is neither a string nor an array of strings.
func Types(node jsonobj.Object) []string {
	t, ok := node.Get("type")
	if !ok {
		return nil
	}
	var one string
	if json.Unmarshal(t, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(t, &many)
	return many
}

// EscapePointer escapes a property or definition name for use as one
// reference token of a JSON Pointer (RFC 6901): "~" becomes "~0" and "/"
// becomes "~1".
func EscapePointer(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// AddToDescription appends notes to the "description" of node, after its
// text and a space, or sets it when node has none. Constraints, when
// there are any, come last as one note, "Constraints: " and the
// constraints joined by ", " and ended by ".". With neither notes nor
// constraints node is left as it is.
func AddToDescription(node *jsonobj.Object, notes, constraints []string) {
	if len(constraints) > 0 {
		notes = append(notes, "Constraints: "+strings.Join(constraints, ", ")+".")
	}
	if len(notes) == 0 {
		return
	}
	desc := ""
	if d, ok := node.Get("description"); ok {
		_ = json.Unmarshal(d, &desc)
	}
	if desc != "" {
		desc += " "
	}
	node.Set("description", jsonobj.Quote(desc+strings.Join(notes, " ")))
}
