package jsonschema

import "hash/maphash"

// equal reports whether the instance value at i equals the schema value e
// (JSON equality: numbers by value, objects regardless of key order).
func (v *validator) equal(i int32, e *jval) bool {
	if !v.spend(1) {
		return false
	}
	t := &v.tape[i]
	switch e.kind {
	case kNull, kTrue, kFalse:
		return t.kind == e.kind
	case kString:
		return t.kind == kString && string(v.str(t)) == e.s
	case kNumber:
		return t.kind == kNumber && numEqual(v.data[t.start:t.end], e.raw, v.nb1, v.nb2)
	case kArray:
		if t.kind != kArray || int(t.n) != len(e.elems) {
			return false
		}
		k := i + 1
		for _, x := range e.elems {
			if !v.equal(k, x) {
				return false
			}
			k = v.tape[k].next
		}
		return true
	case kObject:
		if t.kind != kObject || int(t.n) != len(e.members) {
			return false
		}
		for k := i + 1; k < t.next; k = v.tape[k+1].next {
			x, ok := e.get(string(v.str(&v.tape[k])))
			if !ok || !v.equal(k+1, x) {
				return false
			}
		}
		return true
	}
	return false
}

// equalTape reports whether the instance values at a and b are equal.
func (v *validator) equalTape(a, b int32) bool {
	if !v.spend(1) {
		return false
	}
	ta, tb := &v.tape[a], &v.tape[b]
	if ta.kind != tb.kind || ta.n != tb.n {
		return false
	}
	switch ta.kind {
	case kString:
		return string(v.str(ta)) == string(v.str(tb))
	case kNumber:
		return numEqual(v.data[ta.start:ta.end], v.data[tb.start:tb.end], v.nb1, v.nb2)
	case kArray:
		x, y := a+1, b+1
		for x < ta.next {
			if !v.equalTape(x, y) {
				return false
			}
			x, y = v.tape[x].next, v.tape[y].next
		}
		return true
	case kObject:
		for x := a + 1; x < ta.next; x = v.tape[x+1].next {
			key := v.str(&v.tape[x])
			found := false
			for y := b + 1; y < tb.next; y = v.tape[y+1].next {
				if !v.spend(1) {
					return false
				}
				if string(v.str(&v.tape[y])) == string(key) {
					if !v.equalTape(x+1, y+1) {
						return false
					}
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return true
}

var hashSeed = maphash.MakeSeed()

// hashTape returns a hash of the value at i that agrees with equalTape.
func (v *validator) hashTape(i int32) uint64 {
	t := &v.tape[i]
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteByte(t.kind)
	switch t.kind {
	case kString:
		h.Write(v.str(t))
	case kNumber:
		d := parseDecimal(v.data[t.start:t.end], v.nb1)
		if d.neg {
			h.WriteByte('-')
		}
		h.Write(d.digits)
		var e [8]byte
		for j := range e {
			e[j] = byte(d.exp >> (8 * j))
		}
		h.Write(e[:])
	case kArray:
		for k := i + 1; k < t.next; k = v.tape[k].next {
			x := v.hashTape(k)
			for j := 0; j < 8; j++ {
				h.WriteByte(byte(x >> (8 * j)))
			}
		}
	case kObject:
		var sum uint64
		for k := i + 1; k < t.next; k = v.tape[k+1].next {
			var kh maphash.Hash
			kh.SetSeed(hashSeed)
			kh.Write(v.str(&v.tape[k]))
			sum += kh.Sum64()*31 + v.hashTape(k+1)
		}
		for j := 0; j < 8; j++ {
			h.WriteByte(byte(sum >> (8 * j)))
		}
	}
	return h.Sum64()
}

// duplicateItems returns the indexes of two equal items of the array at
// i, or -1, -1.
func (v *validator) duplicateItems(i int32) (int, int) {
	t := &v.tape[i]
	// Comparing and hashing read the items' text, at each application
	// of uniqueItems: charged by its length as well as by the values
	// (4,900 applications to 100 strings of 10 KB took 0.5 s within the
	// budget, and the values' hashing cost 4 steps each).
	span := int(t.end - t.start)
	if t.n <= 16 {
		if !v.spend(int(t.n) * span / stringBytesPerStep) { // each item read against each other
			return -1, -1
		}
		a := 0
		for x := i + 1; x < t.next; x = v.tape[x].next {
			b := a + 1
			for y := v.tape[x].next; y < t.next; y = v.tape[y].next {
				if v.equalTape(x, y) {
					return a, b
				}
				b++
			}
			a++
		}
		return -1, -1
	}
	type item struct {
		at  int32
		idx int
	}
	if !v.spend(4*int(t.next-i) + span/stringBytesPerStep) { // hashing visits every value once
		return -1, -1
	}
	seen := make(map[uint64][]item, t.n)
	idx := 0
	for x := i + 1; x < t.next; x = v.tape[x].next {
		h := v.hashTape(x)
		for _, it := range seen[h] {
			if v.equalTape(it.at, x) {
				return it.idx, idx
			}
		}
		seen[h] = append(seen[h], item{x, idx})
		idx++
	}
	return -1, -1
}
