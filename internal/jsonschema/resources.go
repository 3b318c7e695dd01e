package jsonschema

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Options say how CompileWith treats a schema. The zero value suits
// schemas written elsewhere (imported from an MCP server): formats are
// annotations, as draft 2020-12 says by default, and a pattern that cannot
// be translated to RE2 is ignored and reported by Schema.Ignored.
type Options struct {
	// AssertFormat makes the formats date-time, date, time, email, uuid,
	// ipv4, ipv6 and uri assertions. Other formats stay annotations.
	AssertFormat bool
	// StrictPatterns makes a pattern that cannot be translated to RE2 a
	// compile error instead of an ignored keyword.
	StrictPatterns bool
	// Resources are the schemas, registered in advance, that a $ref
	// outside the document may name. Schemas are never fetched.
	Resources *Resources
}

// Resources holds schema documents registered in advance under absolute
// URIs, for $ref to name. A Resources is safe for concurrent use.
type Resources struct {
	mu   sync.RWMutex
	docs map[string][]byte
	size int
}

// Add registers doc under uri, an absolute URI without a fragment (an
// empty fragment "#" is dropped). A reference to uri, or to a $id or
// $anchor inside doc, then resolves to it. Add checks that doc is strict
// JSON within MaxSchemaBytes and refuses a second document under the same
// URI or documents that add up to more than MaxSchemaBytes.
func (r *Resources) Add(uri string, doc []byte) error {
	u, err := url.Parse(uri)
	if err != nil || !u.IsAbs() || strings.TrimSuffix(u.Fragment, "#") != "" {
		return fmt.Errorf("jsonschema: resource URI %s must be absolute and without a fragment", quote(shorten(uri, 80)))
	}
	u.Fragment, u.RawFragment = "", ""
	if _, _, err := parseDoc(doc); err != nil {
		return fmt.Errorf("jsonschema: resource %s: %w", u, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := u.String()
	if _, dup := r.docs[key]; dup {
		return fmt.Errorf("jsonschema: resource %s is already registered", key)
	}
	if r.size+len(doc) > MaxSchemaBytes {
		return fmt.Errorf("jsonschema: the resources would add up to more than %d bytes", MaxSchemaBytes)
	}
	if r.docs == nil {
		r.docs = make(map[string][]byte)
	}
	r.docs[key] = append([]byte(nil), doc...)
	r.size += len(doc)
	return nil
}

func (r *Resources) get(uri string) ([]byte, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	doc, ok := r.docs[uri]
	return doc, ok
}

// defaultBase is the base URI of a document without an $id. The .invalid
// top-level domain never resolves.
const defaultBase = "https://schema.invalid/root.json"

// resources is the compiler's view of the documents a schema uses: the
// schema resources by URI, their anchors, and the base URI of the schema
// being compiled.
type resources struct {
	base    string
	rootDoc []byte
	root    *jval              // the document, at defaultBase
	byURI   map[string]*jval   // the other resources; see lookup
	anchors map[string]*jval   // URI#name → schema
	dyn     map[string][]*jval // $dynamicAnchor name → schemas
	loaded  map[string][]byte  // registered documents used
	size    int                // bytes of registered documents parsed
	dynRefs []dynLink

	external    string // why the external validator is needed, "" if not
	externalLoc string
	ignored     []*SchemaError
}

// A dynLink is a $dynamicRef to name by n.
type dynLink struct {
	n    *node
	name string
}

func (r *resources) init(root *jval, doc []byte) {
	r.base = defaultBase
	r.rootDoc = doc
	r.root = root
}

// lookup returns the resource uri, if it is known.
func (r *resources) lookup(uri string) (*jval, bool) {
	if uri == defaultBase {
		return r.root, true
	}
	v, ok := r.byURI[uri]
	return v, ok
}

func (r *resources) add(uri string, v *jval) {
	if _, dup := r.lookup(uri); dup {
		return
	}
	if r.byURI == nil {
		r.byURI = make(map[string]*jval)
	}
	r.byURI[uri] = v
}

// enter registers schema v, which has $id id, as a resource and makes its
// URI the base.
func (r *resources) enter(v *jval, id string) error {
	abs, err := resolveURI(r.base, id)
	if err != nil {
		return err
	}
	abs, _, _ = strings.Cut(abs, "#")
	r.add(abs, v)
	r.base = abs
	return nil
}

func (r *resources) addAnchor(name string, v *jval, dynamic bool) {
	if r.anchors == nil {
		r.anchors = make(map[string]*jval)
	}
	key := r.base + "#" + name
	if _, dup := r.anchors[key]; !dup {
		r.anchors[key] = v
	}
	if dynamic {
		if r.dyn == nil {
			r.dyn = make(map[string][]*jval)
		}
		r.dyn[name] = append(r.dyn[name], v)
	}
}

// needExternal records that the schema needs the external validator.
func (r *resources) needExternal(loc, why string) {
	if r.external == "" {
		r.external, r.externalLoc = why, loc
	}
}

func (r *resources) ignore(loc, msg string) {
	r.ignored = append(r.ignored, &SchemaError{Pointer: loc, Msg: msg})
}

// resolveURI resolves ref against base. References within the document
// ("#...") skip URL parsing.
func resolveURI(base, ref string) (string, error) {
	if strings.HasPrefix(ref, "#") {
		b, _, _ := strings.Cut(base, "#")
		return b + ref, nil
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not a URI reference", quote(shorten(ref, 80)))
	}
	b, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("base URI %s is not a URI", quote(shorten(base, 80)))
	}
	return b.ResolveReference(u).String(), nil
}

// knownDialect reports whether a $schema value names a meta-schema whose
// vocabularies this package evaluates (draft 4 to draft 2020-12).
func knownDialect(s string) bool {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#")
	switch s {
	case "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-04/schema":
		return true
	}
	return false
}

// isMetaSchema reports whether uri is that of a standard meta-schema, which
// the external validator has built in.
func isMetaSchema(uri string) bool {
	return strings.HasPrefix(uri, "https://json-schema.org/") || strings.HasPrefix(uri, "http://json-schema.org/")
}

// resolve finds the target of the reference pr.
func (c *compiler) resolve(pr pendingRef) (*node, error) {
	kw := "$ref"
	if pr.dynamic {
		kw = "$dynamicRef"
	}
	loc := pr.n.loc + "/" + kw
	bad := func(format string, args ...any) error {
		return c.errf(loc, "reference %s: "+format, append([]any{quote(shorten(pr.ref, 80))}, args...)...)
	}
	abs, err := resolveURI(pr.base, pr.ref)
	if err != nil {
		return nil, bad("%v", err)
	}
	uri, frag, _ := strings.Cut(abs, "#")
	rv, ok := c.res.lookup(uri)
	if !ok {
		if rv, err = c.load(uri, loc); err != nil {
			return nil, err
		}
		if rv == nil {
			return nil, bad("no schema is registered under %s; schemas are never fetched, so register it in advance", quote(shorten(uri, 120)))
		}
	}
	if rv.kind == kTrue && rv.node != nil && rv.node.loc == metaLoc {
		return rv.node, nil // a meta-schema, for the external validator
	}
	if frag == "" {
		return c.compileAt(rv, uri, "")
	}
	if !strings.HasPrefix(frag, "/") {
		target, ok := c.res.anchors[uri+"#"+frag]
		if !ok {
			return nil, bad("no $anchor %s in %s", quote(shorten(frag, 80)), c.docName(uri))
		}
		if pr.dynamic {
			c.res.dynRefs = append(c.res.dynRefs, dynLink{n: pr.n, name: frag})
		}
		return c.compileAt(target, uri, "")
	}
	unesc, err := url.PathUnescape(frag)
	if err != nil {
		return nil, bad("bad percent-escape")
	}
	v, base := rv, uri
	var b strings.Builder
	if rv.node != nil {
		b.WriteString(rv.node.loc)
	}
	for _, tok := range strings.Split(unesc[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *jval
		switch v.kind {
		case kObject:
			next, _ = v.get(tok)
		case kArray:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v.elems) && strconv.Itoa(i) == tok {
				next = v.elems[i]
			}
		}
		if next == nil {
			return nil, bad("points to nothing in %s", c.docName(uri))
		}
		v = next
		b.WriteByte('/')
		b.WriteString(escapeToken(tok))
		if v.kind == kObject {
			if id, ok := v.get("$id"); ok && id.kind == kString && !strings.HasPrefix(id.s, "#") {
				if b, err := resolveURI(base, id.s); err == nil {
					base, _, _ = strings.Cut(b, "#")
				}
			}
		}
	}
	return c.compileAt(v, base, b.String())
}

// metaLoc marks the stand-in node of a standard meta-schema.
const metaLoc = "\x00meta"

// compileAt compiles v, a schema under base, unless it already is.
func (c *compiler) compileAt(v *jval, base, loc string) (*node, error) {
	if v.node != nil {
		return v.node, nil
	}
	outer := c.res.base
	c.res.base = base
	defer func() { c.res.base = outer }()
	return c.compile(v, loc)
}

func (c *compiler) docName(uri string) string {
	if uri == defaultBase {
		return "the document"
	}
	return quote(shorten(uri, 120))
}

// load parses and compiles the registered document uri, returning its root;
// nil if no document is registered under uri. A standard meta-schema
// becomes a stand-in that only the external validator evaluates.
func (c *compiler) load(uri, loc string) (*jval, error) {
	doc, ok := c.opts.Resources.get(uri)
	if !ok {
		if !isMetaSchema(uri) {
			return nil, nil
		}
		c.res.needExternal(loc, "a reference to the meta-schema "+quote(uri))
		v := &jval{kind: kTrue}
		c.res.add(uri, v)
		n, err := c.compile(v, metaLoc)
		if err != nil {
			return nil, err
		}
		n.loc = metaLoc
		return v, nil
	}
	c.res.size += len(doc)
	if c.res.size > MaxSchemaBytes {
		return nil, c.errf(loc, "the registered schemas used add up to more than %d bytes", MaxSchemaBytes)
	}
	root, _, err := parseDoc(doc)
	if err != nil {
		return nil, c.errf(loc, "registered schema %s: %v", quote(uri), err)
	}
	if c.res.loaded == nil {
		c.res.loaded = make(map[string][]byte)
	}
	c.res.loaded[uri] = doc
	c.res.add(uri, root)
	if _, err := c.compileAt(root, uri, ""); err != nil {
		if se, ok := err.(*SchemaError); ok {
			se.Msg = "in registered schema " + quote(uri) + ": " + se.Msg
		}
		return nil, err
	}
	return root, nil
}

// loadMeta makes sure the custom meta-schema uri, named by $schema at loc,
// is registered, for the external validator to read.
func (c *compiler) loadMeta(uri, loc string) error {
	uri, _, _ = strings.Cut(uri, "#")
	if _, ok := c.res.lookup(uri); ok {
		return nil
	}
	v, err := c.load(uri, loc)
	if err != nil {
		return err
	}
	if v == nil {
		return c.errf(loc, "meta-schema %s: no schema is registered under it; schemas are never fetched, so register it in advance", quote(shorten(uri, 120)))
	}
	return nil
}

// linkDynamic adds to each $dynamicRef every schema with a matching
// $dynamicAnchor, which it may resolve to at validation time, so that
// Compile's checks of the work see them.
func (c *compiler) linkDynamic() {
	for _, l := range c.res.dynRefs {
		for _, v := range c.res.dyn[l.name] {
			if v.node != nil && v.node != l.n.dynRef[0] {
				l.n.dynRef = append(l.n.dynRef, v.node)
			}
		}
	}
}

// Bundle returns doc with every registered schema it refers to, directly
// or through another, embedded under its root's "$defs" (keyed by URI,
// with the URI as "$id"), so that the result needs no Resources: other
// programs that read it, such as a model's provider, can resolve every
// reference too. doc comes back unchanged when it refers to none. Bundle
// fails as CompileWith does, when doc's root is not an object, and when a
// registered schema's own $id names another URI.
func Bundle(doc []byte, r *Resources) ([]byte, error) {
	var c compiler
	if err := c.compileDoc(doc, Options{Resources: r}); err != nil {
		return nil, err
	}
	if len(c.res.loaded) == 0 {
		return doc, nil
	}
	if c.root.kind != kObject {
		return nil, &SchemaError{Msg: "only a schema object can have registered schemas embedded"}
	}
	uris := make([]string, 0, len(c.res.loaded))
	for uri := range c.res.loaded {
		uris = append(uris, uri)
	}
	slices.Sort(uris)
	var add []byte
	for _, uri := range uris {
		sub := c.res.byURI[uri]
		if len(add) > 0 {
			add = append(add, ',')
		}
		add = appendJSONString(add, uri)
		add = append(add, ':')
		raw := compact(sub.raw)
		id, hasID := sub.get("$id")
		switch {
		case sub.kind != kObject:
			add = append(add, `{"$id":`...)
			add = appendJSONString(add, uri)
			add = append(add, `,"allOf":[`...)
			add = append(add, raw...)
			add = append(add, "]}"...)
		case !hasID:
			add = append(add, `{"$id":`...)
			add = appendJSONString(add, uri)
			if len(sub.members) > 0 {
				add = append(add, ',')
			}
			add = append(add, raw[1:]...)
		default:
			abs, err := resolveURI(uri, id.s)
			if abs, _, _ = strings.Cut(abs, "#"); err != nil || abs != uri {
				return nil, &SchemaError{Msg: fmt.Sprintf("registered schema %s has $id %s, another URI", quote(uri), quote(shorten(id.s, 120)))}
			}
			add = append(add, raw...)
		}
	}
	// Insert into the root's $defs, or add one.
	out := make([]byte, 0, len(doc)+len(add)+16)
	if defs, ok := c.root.get("$defs"); ok && defs.kind == kObject {
		end := cap(doc) - cap(defs.raw) + len(defs.raw) - 1 // its closing brace
		out = append(out, doc[:end]...)
		if len(defs.members) > 0 {
			out = append(out, ',')
		}
		out = append(out, add...)
		return append(out, doc[end:]...), nil
	} else if ok {
		return nil, &SchemaError{Pointer: "/$defs", Msg: `"$defs" must be an object`}
	}
	end := cap(doc) - cap(c.root.raw) + len(c.root.raw) - 1
	out = append(out, doc[:end]...)
	if len(c.root.members) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"$defs":{`...)
	out = append(out, add...)
	out = append(out, '}')
	return append(out, doc[end:]...), nil
}
