// Command clawtool-sandbox-helper is the native sandbox's helper as a
// program of its own: the process that builds a run's sandbox (namespaces,
// mounts, Landlock, seccomp, limits) and becomes, or forks, its command. A
// backend made with sandbox.NativeOptions.Helper naming it starts it for
// each run instead of re-executing the program that runs the sandbox.
//
// It holds the helper's code and nothing else, so it starts in a fraction
// of the time and CPU a large program takes to start (its runtime, its
// relocations, the initialisation of its packages). Build it from the same
// version of the module as the program that uses it, without cgo:
//
//	CGO_ENABLED=0 go build -o /usr/local/libexec/clawtool-sandbox-helper \
//		github.com/miniopenclaw/tool/sandbox/cmd/clawtool-sandbox-helper
//
// A helper built from other sources refuses every run (the configuration
// carries the identity of the helper's sources), so a stale one fails
// closed. Run by hand, it says what it is and exits with status 2.
package main

import (
	"syscall"

	// The helper runs in this package's initialisation when the sandbox
	// starts the program; main runs only when a person does. Nothing else
	// is imported (not even fmt or os), so that no other package's
	// initialisation runs before the helper's.
	_ "github.com/miniopenclaw/tool/sandbox/internal/helper"
)

func main() {
	syscall.Write(2, []byte("clawtool-sandbox-helper: the native sandbox starts this program for its runs (sandbox.NativeOptions.Helper); it does nothing on its own\n"))
	syscall.Exit(2)
}
