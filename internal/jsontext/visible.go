package jsontext

import (
	"strings"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/showtext"
)

// Visible returns s for showing in a message: every character that is not
// graphic (see [showtext.Shown]: control characters such as NUL, BEL, ESC,
// DEL and C1 controls, format characters that hide or reorder text such as
// U+202E RIGHT-TO-LEFT OVERRIDE and U+200B ZERO WIDTH SPACE, line
// separators, private-use and unassigned code points) is written as
// \uXXXX, the way JSON spells it, and invalid UTF-8 as U+FFFD. Text that needs
// none of this is returned as it is, without allocating.
func Visible(s string) string {
	for i, r := range s {
		if r == utf8.RuneError || hidden(r) {
			var b strings.Builder
			b.Grow(len(s) + 16)
			b.WriteString(s[:i])
			appendVisible(&b, s[i:])
			return b.String()
		}
	}
	return s
}

// hidden reports whether Visible escapes r: every character
// [showtext.Shown] does not show, the one rule of what is safe to show.
func hidden(r rune) bool { return !showtext.Shown(r) }

func appendVisible(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for _, r := range s {
		switch {
		case !hidden(r):
			b.WriteRune(r) // writes U+FFFD for invalid UTF-8
		case r > 0xffff:
			b.WriteString(`\U`)
			for shift := 28; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		default:
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		}
	}
}

// Shorten returns s cut to at most n characters (runes), the last of them
// "…" when it was cut.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n-1 {
			if utf8.RuneCountInString(s[i:]) == 1 {
				return s
			}
			return s[:i] + "…"
		}
		count++
	}
	return s
}

// ShortKey returns an object key for quoting in a message: at most
// MaxPointerToken characters, reading only a prefix of a long key.
func ShortKey(key []byte) string {
	return Shorten(string(key[:min(len(key), 4*MaxPointerToken+4)]), MaxPointerToken)
}

// MaxPointerToken is about how many characters of each reference token
// AppendPointerToken keeps.
const MaxPointerToken = 60

// AppendPointerToken appends to dst the JSON pointer reference token for
// key, for a message: '~' and '/' escaped as RFC 6901 says, hidden
// characters escaped as Visible does, and a key longer than
// MaxPointerToken characters cut, ending in "…". A pointer built this way
// is exact for the keys a schema declares (which are short) and points
// recognisably at any other.
func AppendPointerToken(dst []byte, key string) []byte {
	key = Visible(Shorten(key, MaxPointerToken))
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
