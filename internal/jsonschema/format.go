package jsonschema

import "github.com/miniopenclaw/tool/internal/jsontext"

// formatNames maps the asserted formats back to their names.
var formatNames = func() map[uint8]string {
	m := make(map[uint8]string, len(formats))
	for name, f := range formats {
		m[f] = name
	}
	return m
}()

// checkFormat reports whether s has the asserted format f. The checks are
// jsontext's, which the typed decoder uses too, so both agree.
func checkFormat(f uint8, s []byte) bool {
	_, ok := jsontext.CheckFormat(formatNames[f], s)
	return ok
}
