package jsontext

import (
	"unicode"
	"unicode/utf8"
)

// FoldName appends to dst the key under which encoding/json matches name
// to a struct field when no field has exactly that name: ASCII letters
// upper-cased, and every other character replaced by the smallest
// character of its Unicode simple case-folding orbit. Two names fold
// alike exactly when encoding/json would bind one to a field named the
// other: "hoſt" (U+017F, LATIN SMALL LETTER LONG S) folds like "host", and
// "\u212Aey" (KELVIN SIGN) like "key", though their UTF-8 lengths differ.
// Invalid UTF-8 folds as U+FFFD, as encoding/json decodes it.
func FoldName(dst, name []byte) []byte {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		dst = utf8.AppendRune(dst, foldRune(r))
		i += n
	}
	return dst
}

// EqualFoldName reports whether FoldName(a) equals FoldName(b), without
// allocating.
func EqualFoldName(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ra, rb := rune(a[i]), rune(b[j])
		if ra < utf8.RuneSelf && rb < utf8.RuneSelf {
			if ra != rb && upperASCII(ra) != upperASCII(rb) {
				return false
			}
			i++
			j++
			continue
		}
		var na, nb int
		ra, na = decodeRune(a[i:])
		rb, nb = decodeRune(b[j:])
		if ra != rb && foldRune(ra) != foldRune(rb) {
			return false
		}
		i += na
		j += nb
	}
	return i == len(a) && j == len(b)
}

func decodeRune(b []byte) (rune, int) {
	if b[0] < utf8.RuneSelf {
		return rune(b[0]), 1
	}
	return utf8.DecodeRune(b)
}

func upperASCII(r rune) rune {
	if 'a' <= r && r <= 'z' {
		return r - ('a' - 'A')
	}
	return r
}

// foldRune returns the smallest character of r's simple case-folding
// orbit (for ASCII letters, the upper case one).
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
