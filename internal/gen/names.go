package gen

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// snake returns the snake_case form of a Go identifier: GetWeather →
// get_weather, userID → user_id, HTTPServer → http_server, Base64Data →
// base64_data. Underscores already in the name are kept.
func snake(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prev != '_' && (unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// exported returns the exported Go identifier for a parameter name:
// city → City, maxPrice → MaxPrice. A name that does not start with a
// letter gets the prefix "P".
func exported(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	if !unicode.IsLetter(r) {
		return "P" + name
	}
	return string(unicode.ToUpper(r)) + name[size:]
}

// unexported returns name with its leading upper-case run lowered as Go
// style writes it: GetWeather → getWeather, HTTPGet → httpGet, ID → id.
func unexported(name string) string {
	rs := []rune(name)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) {
		n-- // keep the capital that starts the next word: HTTPGet → httpGet
	}
	for i := range n {
		rs[i] = unicode.ToLower(rs[i])
	}
	return string(rs)
}

// validToolName is the name rule of tool.Registry, the set every model API
// accepts.
var validToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
