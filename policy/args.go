package policy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// checkPaths returns the refusal of a call one of whose path arguments
// residual.CleanPath refuses, or nil. For a call whose arguments are a flat
// struct ([tool.AccessRequest.Argument] answers) it reads the path
// arguments without encoding anything; otherwise it reads the encoded
// arguments, at every depth.
func (a *Authorizer) checkPaths(req *tool.AccessRequest) error {
	flat := true
	for name := range a.paths {
		v, ok := req.Argument(name)
		if !ok {
			flat = false
			break
		}
		if v.Kind == tool.ArgumentString {
			if _, err := residual.CleanPath(v.String); err != nil {
				return err
			}
		}
	}
	if flat {
		return nil
	}
	raw, err := req.Arguments()
	if err != nil {
		return err
	}
	if len(raw) == 0 {
		return nil
	}
	_, err = residual.ArgsRecord(raw, a.paths)
	return err
}

// argsReason is the refusal of a call whose arguments could not be read.
func argsReason(name string, err error) string {
	var pe *residual.PathError
	var ne *residual.NumberError
	var se *residual.StrictError
	var le *residual.ListError
	if errors.As(err, &pe) || errors.As(err, &ne) || errors.As(err, &se) || errors.As(err, &le) {
		return fmt.Sprintf("call to tool %q was refused: %v", name, err)
	}
	return fmt.Sprintf("call to tool %q was refused: its arguments could not be read", name)
}

// PolicyArgs returns the arguments of a call to the tool name as the
// policies see them in context.args: args, the checked arguments (a JSON
// object), with the path arguments cleaned ([WithPathArguments]) and the values Cedar cannot hold left out, in Cedar's
// JSON form. Its error is the refusal [Authorizer.Decide] would give,
// except that a number the policies cannot read exactly (see
// [Authorizer]) is refused whether or not a policy reads it.
func (a *Authorizer) PolicyArgs(name string, args json.RawMessage) (json.RawMessage, error) {
	if err := residual.Strict(args); err != nil {
		return nil, errors.New(argsReason(name, err))
	}
	if ne := residual.FirstInexact(args, residual.Use{All: true}); ne != nil {
		return nil, errors.New(argsReason(name, ne))
	}
	rec, err := residual.ArgsRecord(args, a.paths)
	if err != nil {
		return nil, errors.New(argsReason(name, err))
	}
	return rec.MarshalJSON()
}
