package residual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// A ListError refuses a call with a list of two or more values in an
// argument that a policy compares with == or != (see FirstList); its
// message is for the model.
type ListError struct {
	Top string // the top-level argument it is in
	At  string // where the list is: argv, opts.paths, items[0]
	N   int    // how many values it holds
}

func (e *ListError) Error() string {
	return fmt.Sprintf("argument %s is a list of %d values that a permission policy compares with == or !=; the policies see a list as a set, without its order or repeats, so they cannot tell it from the same values in another order; send a list the policies need not compare, or ask for the policy to read it with contains, containsAll or containsAny",
		e.At, e.N)
}

// FirstList returns the first list of two or more values (a JSON array)
// in the values of args (a JSON object) that use compares (see
// Use.ComparedPaths), at any depth within them: Cedar holds an array as a set, so a policy
// that permits argv == ["cp","a","b"] would permit ["cp","b","a"] and
// ["cp","a","b","b"] too, though a tool runs them differently. It
// returns nil when there is none, when use compares nothing, and when
// args is not a well-formed object (which ArgsRecord refuses). Values
// are visited in the order of use's paths, members in key order.
func FirstList(args []byte, use Use) *ListError {
	if !use.ComparedAll && len(use.Compared) == 0 || bytes.IndexByte(args, '[') < 0 {
		return nil // the common cases: nothing compared, or no array at all
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	if use.ComparedAll {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if e := listIn(m[k], ArgName(k), 0); e != nil {
				e.Top = k
				return e
			}
		}
		return nil
	}
	for _, path := range use.ComparedPaths {
		if e := listAt(m, path, "", 0); e != nil {
			e.Top = path[0].Key
			return e
		}
	}
	return nil
}

// listAt is FirstList at the end of path from v, at the path at.
func listAt(v any, path []Step, at string, depth int) *ListError {
	if len(path) == 0 {
		return listIn(v, at, depth)
	}
	if depth > MaxDepth {
		return nil // ArgsRecord refuses it
	}
	st := path[0]
	if st.Elems {
		list, _ := v.([]any)
		for i, x := range list {
			if e := listAt(x, path[1:], fmt.Sprintf("%s[%d]", at, i), depth+1); e != nil {
				return e
			}
		}
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // an access Cedar refuses: the policy fails
	}
	if at != "" {
		at += "."
	}
	return listAt(obj[st.Key], path[1:], at+ArgName(st.Key), depth+1)
}

// listIn is FirstList within one value, at the path at.
func listIn(v any, at string, depth int) *ListError {
	if depth > MaxDepth {
		return nil // ArgsRecord refuses it
	}
	switch v := v.(type) {
	case []any:
		if len(v) >= 2 {
			return &ListError{At: at, N: len(v)}
		}
		for i, x := range v {
			if e := listIn(x, fmt.Sprintf("%s[%d]", at, i), depth+1); e != nil {
				return e
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if e := listIn(v[k], at+"."+ArgName(k), depth+1); e != nil {
				return e
			}
		}
	}
	return nil
}
