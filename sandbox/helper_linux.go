package sandbox

import (
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

// helperEnv marks the re-executed binary as the sandbox helper. It is the
// helper's whole environment; the command gets the policy's environment.
const helperEnv = helper.Env

// Main is kept for programs written when the helper ran from it, and does
// nothing but return: the helper now runs while the program initialises
// (see the package documentation), so a program need not call it.
//
// Deprecated: programs no longer need to call Main.
func Main() {}

// errNotFound is what the helper reports for a command not in the PATH.
const errNotFound = helper.NotFound
