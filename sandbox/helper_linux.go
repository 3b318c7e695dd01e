package sandbox

import (
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

// helperEnv marks the re-executed binary as the sandbox helper. It is the
// helper's whole environment; the command gets the policy's environment.
const helperEnv = helper.Env

// errNotFound is what the helper reports for a command not in the PATH.
const errNotFound = helper.NotFound
