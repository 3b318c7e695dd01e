package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/cedar-policy/cedar-go"
)

var errBadArgs = errors.New("malformed arguments")

// argsRecord converts checked arguments, a JSON object the registry has
// already parsed strictly, to a Cedar record in one pass, by the rules of
// cedarValue. Nesting deeper than maxValueDepth is refused.
// With root, path values are resolved inside it (see WithPathRoot).
func argsRecord(args []byte, paths map[string]bool, root *os.Root) (cedar.Record, error) {
	p := argParser{b: args, paths: paths, root: root}
	p.space()
	if p.i == len(p.b) {
		return cedar.NewRecord(nil), nil
	}
	v, ok, err := p.value(0)
	if err != nil {
		return cedar.Record{}, err
	}
	rec, isRec := v.(cedar.Record)
	if !ok || !isRec {
		return cedar.Record{}, errBadArgs
	}
	return rec, nil
}

type argParser struct {
	b     []byte
	i     int
	paths map[string]bool // keys whose string values are paths to clean
	root  *os.Root        // when set, paths are resolved inside it
	odd   bool            // a number that may not be a whole Long, or a null in an array, was scanned
}

func (p *argParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// value parses one JSON value; ok is false for null and for numbers
// that are not whole numbers in 64 bits, which are left out.
func (p *argParser) value(depth int) (v cedar.Value, ok bool, err error) {
	if depth > maxValueDepth {
		return nil, false, errBadArgs
	}
	p.space()
	if p.i >= len(p.b) {
		return nil, false, errBadArgs
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := cedar.RecordMap{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return cedar.NewRecord(m), true, nil
		}
		for {
			p.space()
			k, err := p.str()
			if err != nil {
				return nil, false, err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false, errBadArgs
			}
			p.i++
			v, ok, err := p.value(depth + 1)
			if err != nil {
				return nil, false, err
			}
			if ok {
				if str, isStr := v.(cedar.String); isStr && p.paths[k] {
					if p.root == nil {
						v = cedar.String(cleanPath(string(str)))
					} else {
						r, err := resolveIn(p.root, string(str))
						if err != nil {
							return nil, false, err
						}
						v = cedar.String(r)
					}
				}
				m[cedar.String(k)] = v
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false, errBadArgs
			}
			if p.b[p.i] == '}' {
				p.i++
				return cedar.NewRecord(m), true, nil
			}
			if p.b[p.i] != ',' {
				return nil, false, errBadArgs
			}
			p.i++
		}
	case c == '[':
		p.i++
		var vals []cedar.Value
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return cedar.NewSet(), true, nil
		}
		for {
			v, ok, err := p.value(depth + 1)
			if err != nil {
				return nil, false, err
			}
			if ok {
				vals = append(vals, v)
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false, errBadArgs
			}
			if p.b[p.i] == ']' {
				p.i++
				return cedar.NewSet(vals...), true, nil
			}
			if p.b[p.i] != ',' {
				return nil, false, errBadArgs
			}
			p.i++
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, false, err
		}
		return cedar.String(s), true, nil
	case c == 't' && p.lit("true"):
		return cedar.True, true, nil
	case c == 'f' && p.lit("false"):
		return cedar.False, true, nil
	case c == 'n' && p.lit("null"):
		return nil, false, nil
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.number()
		if err != nil {
			return nil, false, err
		}
		if n, whole, _ := wholeNumber(lit); whole {
			return cedar.Long(n), true, nil
		}
		// Left out: a call whose policies read it has been refused
		// before (see firstInexact); no policy reads this one.
		return nil, false, nil
	}
	return nil, false, errBadArgs
}

func (p *argParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str parses a JSON string; escapes are decoded by encoding/json.
func (p *argParser) str() (string, error) {
	raw, escaped, err := p.rawStr()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errBadArgs
	}
	return s, nil
}

// cleanPath returns the path a file tool resolves p to, lexically:
// backslashes read as slashes, "." and ".." resolved, repeated slashes
// merged. A relative path that climbs out of its root keeps its leading
// "../", so a condition such as like "docs/*" cannot be dodged with
// "docs/../secrets/k", and one on "../*" can refuse escapes.
func cleanPath(p string) string {
	if p == "" {
		return p
	}
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}

// WithPathRoot makes the path arguments (see [WithPathArguments]) of the
// named tools (of every tool when none is named) resolve inside root as
// the workspace's file tools resolve them with [os.Root]: relative to
// root, symbolic links followed, but only while they stay inside it.
// Policies see the path a link leads to, relative to root, so a
// condition such as context.args.path like "docs/*" cannot be dodged by
// a link docs/x pointing to ../secrets: the policy sees "secrets". A path
// that is absolute, climbs out of root, or leads out of it through a
// link (an absolute target or one that climbs above root) is refused
// before the policies run, with a message saying so; so is a chain of
// more than 40 links. Components that do not exist (a file about to be
// written) are kept as given, lexically cleaned.
//
// The path is resolved when the call is decided; the tool resolves it
// again when it runs. Confine the tool to the same root (the workspace
// tools are) so that a link changed in between cannot lead out.
func WithPathRoot(root *os.Root, tools ...string) Option {
	return func(a *Authorizer) {
		a.pathRoot = root
		a.pathRootTools = nil
		if len(tools) > 0 {
			a.pathRootTools = map[string]bool{}
			for _, t := range tools {
				a.pathRootTools[t] = true
			}
		}
	}
}

// pathRootFor returns the root the tool's path arguments resolve in, or nil.
func (a *Authorizer) pathRootFor(name string) *os.Root {
	if a.pathRoot == nil || a.pathRootTools != nil && !a.pathRootTools[name] {
		return nil
	}
	return a.pathRoot
}

// maxLinks bounds the symbolic links followed resolving one path, as
// Linux does.
const maxLinks = 40

// A pathError refuses a path argument; its message is for the model.
type pathError struct {
	path, why string
}

func (e *pathError) Error() string { return fmt.Sprintf("path %q %s", e.path, e.why) }

// argsReason is the refusal of a call whose arguments could not be read.
func argsReason(name string, err error) string {
	var pe *pathError
	var ne *numberError
	if errors.As(err, &pe) || errors.As(err, &ne) {
		return fmt.Sprintf("call to tool %q was refused: %v", name, err)
	}
	return fmt.Sprintf("call to tool %q was refused: its arguments could not be read", name)
}

// resolveIn returns p as a path inside root, symbolic links resolved.
func resolveIn(root *os.Root, p string) (string, error) {
	if p == "" {
		return p, nil
	}
	given := p
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.ContainsRune(p, 0) {
		return "", &pathError{given, "contains a NUL byte"}
	}
	if path.IsAbs(p) {
		return "", &pathError{given, "is absolute; paths are relative to the workspace"}
	}
	// Cleaned first, as the workspace tools clean it before os.Root
	// resolves it: ".." only remains in front, or in link targets.
	parts := strings.Split(path.Clean(p), "/")
	var done []string
	links := 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				if links > 0 {
					return "", &pathError{given, "leads outside the workspace through a symbolic link"}
				}
				return "", &pathError{given, "climbs out of the workspace"}
			}
			done = done[:len(done)-1]
			continue
		}
		cand := path.Join(append(done, c)...)
		fi, err := root.Lstat(cand)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Not there (yet): the rest is taken as written, unless it
			// climbs back, which the file system would not allow.
			if slices.Contains(parts, "..") {
				return "", &pathError{given, "cannot be resolved in the workspace: it climbs out of a directory that does not exist"}
			}
			return path.Join(append([]string{cand}, parts...)...), nil
		}
		if err != nil {
			return "", &pathError{given, "cannot be resolved in the workspace"}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", &pathError{given, fmt.Sprintf("goes through more than %d symbolic links", maxLinks)}
		}
		target, err := root.Readlink(cand)
		if err != nil {
			return "", &pathError{given, "cannot be resolved in the workspace"}
		}
		if path.IsAbs(strings.ReplaceAll(target, "\\", "/")) {
			return "", &pathError{given, "leads outside the workspace through a symbolic link"}
		}
		parts = append(strings.Split(target, "/"), parts...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// PolicyArgs returns the arguments of a call to the tool name as the
// policies see them in context.args: args, the checked arguments (a JSON
// object), with the path arguments cleaned or resolved ([WithPathArguments],
// [WithPathRoot]) and the values Cedar cannot hold left out, in Cedar's
// JSON form. Its error is the refusal [Authorizer.Decide] would give,
// except that a number the policies cannot read exactly (see
// [Authorizer]) is refused whether or not a policy reads it.
func (a *Authorizer) PolicyArgs(name string, args json.RawMessage) (json.RawMessage, error) {
	if ne := firstInexact(args, contextUse{all: true}); ne != nil {
		return nil, errors.New(argsReason(name, ne))
	}
	rec, err := argsRecord(args, a.paths, a.pathRootFor(name))
	if err != nil {
		return nil, errors.New(argsReason(name, err))
	}
	return rec.MarshalJSON()
}
