package jsonschema

import "unicode/utf8"

// applyDefaults returns the instance as compact JSON with the defaults of
// missing properties added at the end of each object, or nil when no
// default applies. It runs on a valid instance only.
//
// The schemas that apply to a value are found through properties, items
// and prefixItems, and at one location through $ref, allOf, the taken
// if/then/else branch, and the alternative of anyOf/oneOf that the value
// matches.
func (v *validator) applyDefaults(root *node) []byte {
	v.nodeBuf = v.nodeBuf[:0]
	if !root.defReach {
		return nil
	}
	v.expand(root, 0, 0)
	if !v.walk(0, len(v.nodeBuf), 0, false) {
		return nil
	}
	v.out = make([]byte, 0, len(v.data)+64)
	v.walk(0, len(v.nodeBuf), 0, true)
	if v.outOver {
		return nil
	}
	return v.out
}

// expand appends n and the schemas n applies in place to the value at i.
func (v *validator) expand(n *node, i int32, depth int) {
	if n.boolean || depth > maxInPlaceDepth || len(v.nodeBuf) > 4*maxInPlaceCount {
		return
	}
	v.nodeBuf = append(v.nodeBuf, n)
	if n.ref != nil {
		v.expand(n.ref, i, depth+1)
	}
	for _, m := range n.allOf {
		v.expand(m, i, depth+1)
	}
	for _, m := range n.anyOf {
		if v.eval(m, i, false) {
			v.expand(m, i, depth+1)
			break
		}
	}
	for _, m := range n.oneOf {
		if v.eval(m, i, false) {
			v.expand(m, i, depth+1)
			break
		}
	}
	if n.ifN != nil {
		branch := n.elseN
		if v.eval(n.ifN, i, false) {
			branch = n.thenN
		}
		if branch != nil {
			v.expand(branch, i, depth+1)
		}
	}
}

// defaultOf returns the default of a property schema, following $ref.
func defaultOf(n *node) []byte {
	for k := 0; k < 32 && n != nil; k++ {
		if n.def != nil {
			return n.def
		}
		n = n.ref
	}
	return nil
}

// walk visits the value at i, to which the schemas v.nodeBuf[lo:hi]
// apply. Without write it reports whether any default would be added;
// with write it appends the value, defaults included, to v.out.
func (v *validator) walk(lo, hi int, i int32, write bool) bool {
	if v.outOver {
		return false
	}
	t := v.tape[i]
	switch t.kind {
	case kObject:
		added := false
		if write {
			v.out = append(v.out, '{')
		}
		first := true
		if !write && !v.anyChildReach(lo, hi) {
			goto defaults
		}
		for k := i + 1; k < t.next; k = v.tape[k+1].next {
			if write {
				if !first {
					v.out = append(v.out, ',')
				}
				kt := &v.tape[k]
				v.out = append(v.out, v.data[kt.start:kt.end]...)
				v.out = append(v.out, ':')
			}
			first = false
			key := v.str(&v.tape[k])
			mark := len(v.nodeBuf)
			for j := lo; j < hi; j++ {
				if n := v.nodeBuf[j]; write || n.childReach {
					if pn := n.prop(key); pn != nil && (write || pn.defReach) {
						v.expand(pn, k+1, 0)
					}
				}
			}
			if v.walk(mark, len(v.nodeBuf), k+1, write) {
				added = true
				if !write {
					v.nodeBuf = v.nodeBuf[:mark]
					return true
				}
			}
			v.nodeBuf = v.nodeBuf[:mark]
		}
	defaults:
		var done []string
		for j := lo; j < hi; j++ {
			n := v.nodeBuf[j]
			if !n.defHere {
				continue
			}
			// Only the properties with a default are read: all of them,
			// for each object, made 20,000 properties beside one default
			// and 10,000 empty objects take 2 s.
			if !v.spend(len(n.defProps) / listNamesPerStep) {
				return false
			}
			for _, j := range n.defProps {
				p := n.props[j]
				d := defaultOf(p.n)
				if d == nil || v.member(i, p.name) >= 0 {
					continue
				}
				if !write {
					return true
				}
				dup := false
				for _, name := range done {
					if name == p.name {
						dup = true
						break
					}
				}
				if dup {
					continue
				}
				done = append(done, p.name)
				added = true
				if !first {
					v.out = append(v.out, ',')
				}
				first = false
				v.out = appendJSONString(v.out, p.name)
				v.out = append(v.out, ':')
				v.out = append(v.out, d...)
				if v.maxOut > 0 && len(v.out) > v.maxOut {
					v.outOver = true
					return added
				}
			}
		}
		if write {
			v.out = append(v.out, '}')
		}
		return added
	case kArray:
		added := false
		if write {
			v.out = append(v.out, '[')
		}
		if !write && !v.anyChildReach(lo, hi) {
			return false
		}
		idx := 0
		for k := i + 1; k < t.next; k = v.tape[k].next {
			if write && idx > 0 {
				v.out = append(v.out, ',')
			}
			mark := len(v.nodeBuf)
			for j := lo; j < hi; j++ {
				n := v.nodeBuf[j]
				sn := n.items
				if idx < len(n.prefixItems) {
					sn = n.prefixItems[idx]
				}
				if sn != nil {
					v.expand(sn, k, 0)
				}
			}
			if v.walk(mark, len(v.nodeBuf), k, write) {
				added = true
				if !write {
					v.nodeBuf = v.nodeBuf[:mark]
					return true
				}
			}
			v.nodeBuf = v.nodeBuf[:mark]
			idx++
		}
		if write {
			v.out = append(v.out, ']')
		}
		return added
	default:
		if write {
			v.out = append(v.out, v.data[t.start:t.end]...)
		}
		return false
	}
}

// anyChildReach reports whether a default can apply below the value to
// which the schemas v.nodeBuf[lo:hi] apply.
func (v *validator) anyChildReach(lo, hi int) bool {
	for _, n := range v.nodeBuf[lo:hi] {
		if n.childReach {
			return true
		}
	}
	return false
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
