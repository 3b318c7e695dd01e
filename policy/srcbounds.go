package policy

import (
	"errors"
	"fmt"

	"github.com/miniopenclaw/tool/internal/boundedfile"
	"github.com/miniopenclaw/tool/internal/regularfile"
)

// Bounds of a policy file's text, checked before Cedar parses it.
// cedar-go's parser and evaluator recurse once per level of nesting, and
// a Go stack overflow is not an error that can be recovered from: it ends
// the process. A few megabytes of "(((…" or "!!!…" did that.
const (
	// MaxPolicyBytes bounds the text of one policy set (a file).
	MaxPolicyBytes = 4 << 20
	// MaxPolicyNesting bounds how deeply brackets ("(", "[", "{") nest
	// in a policy.
	MaxPolicyNesting = 256
	// MaxPolicyTokens bounds the tokens of one policy (from the end of
	// the one before to its ";"): it bounds how long a chain of
	// operators ("a && b && …", "!!…", "if … then if …", "x.a.a…") can
	// be, and so how deeply it nests.
	MaxPolicyTokens = 1 << 16
)

// checkSource refuses a policy text past the bounds above, naming the
// bound and the line. It reads Cedar's lexical grammar only as far as
// it needs: strings (with their escapes), "//" comments, and tokens.
func checkSource(name string, src []byte) error {
	if len(src) > MaxPolicyBytes {
		return fmt.Errorf("policy %s: %d bytes, over the bound of %d (MaxPolicyBytes)", name, len(src), MaxPolicyBytes)
	}
	line, depth, tokens := 1, 0, 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '"':
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				if i < len(src) && src[i] == '\n' {
					line++
				}
				i++
			}
			i++
		case isIdent(c):
			for i < len(src) && isIdent(src[i]) {
				i++
			}
		default:
			switch c {
			case '(', '[', '{':
				depth++
				if depth > MaxPolicyNesting {
					return fmt.Errorf("policy %s:%d: brackets nested more than %d deep (MaxPolicyNesting)", name, line, MaxPolicyNesting)
				}
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
			i++
		}
		tokens++
		if c == ';' && depth == 0 {
			tokens = 0
		}
		if tokens > MaxPolicyTokens {
			return fmt.Errorf("policy %s:%d: a policy of more than %d tokens (MaxPolicyTokens)", name, line, MaxPolicyTokens)
		}
	}
	return nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// readPolicyFile reads the policy file at path, reading no more than
// MaxPolicyBytes and one byte more: a longer file is refused while it is
// read. A file that other users may write, or that another user than
// this process's or root owns, is refused (see checkPolicyFile), judged
// on the file opened, so a symbolic link is judged by its target.
func readPolicyFile(path string) ([]byte, error) {
	return readPolicyFileWhile(path, nil)
}

// readPolicyFileWhile is readPolicyFile, calling during (when not nil)
// once the file is open and judged, before it is read: the tests' way to
// change it at that moment. A regular file whose size or modification
// time changed while it was read is refused: it was being rewritten in
// place, and what was read may be cut between two policies, which
// parses (a forbid at its end lost).
func readPolicyFileWhile(path string, during func()) ([]byte, error) {
	// A named pipe blocked the open (and so a reload) until someone
	// wrote to it, and then loaded what they wrote; a device could be
	// read without end. Only a regular file is a policy file, judged as
	// opened.
	f, fi, err := regularfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkPolicyFile(path, fi); err != nil {
		return nil, err
	}
	if during != nil {
		during()
	}
	src, err := boundedfile.ReadAll(f, path, MaxPolicyBytes)
	if _, ok := errors.AsType[*boundedfile.TooLargeError](err); ok {
		return nil, fmt.Errorf("%w (MaxPolicyBytes)", err)
	}
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		return nil, fmt.Errorf("%s changed while it was read (it is being written in place): not loaded; write a new file and rename it over the old one", path)
	}
	return src, nil
}
