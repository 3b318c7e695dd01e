package jsonschema

import "github.com/miniopenclaw/tool/internal/jsontext"

// foldMatch returns the declared property that key would be bound to by a
// decoder that matches names as encoding/json does (see
// jsontext.FoldName), or "". Only keys that are not a declared property
// are asked about.
func (n *node) foldMatch(key []byte, scratch []byte) (name string, buf []byte) {
	if n.foldIndex != nil {
		buf = jsontext.FoldName(scratch[:0], key)
		return n.foldIndex[string(buf)], buf
	}
	for _, p := range n.props {
		if jsontext.EqualFoldName([]byte(p.name), key) {
			return p.name, scratch
		}
	}
	return "", scratch
}

// foldIndex maps the folded form of each property name to the name. Of
// names that fold alike, the first declared wins, as with encoding/json's
// first field of that folded name.
func foldIndex(props []prop) map[string]string {
	m := make(map[string]string, len(props))
	for _, p := range props {
		k := string(jsontext.FoldName(nil, []byte(p.name)))
		if _, ok := m[k]; !ok {
			m[k] = p.name
		}
	}
	return m
}
