// Package container is the sandbox backend that runs each command in a
// container of a Docker-compatible engine (Docker, or Podman's compatible
// socket), under the same [sandbox.Policy] as the native Linux backend.
//
//	c, err := container.New(ctx, container.Options{Image: "python:3.12-slim", Warm: true})
//	if err != nil {
//		return err // no engine, or one that cannot enforce a limit: nothing runs
//	}
//	defer c.Close()
//	cmd := sandbox.CommandContext(ctx, policy, "python3", "script.py")
//	cmd.Backend = c
//	out, err := cmd.Output()
//
// A [*Backend] is a [sandbox.Backend]; code written against that interface
// does not care which backend it has. It lives in a package of its own so
// that a program that only runs native commands does not link the engine's
// client.
//
// # Modes
//
// A fresh container per call is the default; [Options.Warm] keeps one
// running container per image and policy and runs each call through a
// call server (this program's own binary, mounted read-only into the
// container), falling back to the engine's exec when the server cannot
// run. Result.Mode says which ran each call.
//
// # Protected paths
//
// Each call binds the policy's protected paths read-only, as the native
// backend does, and before every call searches the workspace for
// repositories nested in it (a clone in vendor/lib, a submodule, a
// worktree's .git file) to protect theirs too, with the native backend's
// bounds: a workspace the search cannot finish is refused, naming the
// bound. A warm container's mounts are fixed when it starts, so a call
// whose protected set changed since retires it and starts a new one.
//
// # The call server
//
// A warm container's main process is a call server: this program's own
// binary again, bind-mounted read-only into the container (with its
// dynamic loader and libraries, so that any image will do) and started
// from the initialisation of another small internal package, like the
// helper. The backend talks to it over a unix socket with a bounded binary
// framing; for each call it forks and executes the command inside the
// container as the sandbox user, streams its output back into the same
// capped buffers, kills the call's whole process tree on a timeout or an
// output flood, and kills and reaps whatever the call left before it
// reports the end, so a call costs a fork and exec rather than an engine
// exec (BENCHMARKS.md has the figures). When the server cannot run in a container
// the backend falls back to the engine's exec and says so in every
// Result (Mode and Fallback); it never falls back to the host.
//
// # Network allow lists and streams
//
// Under [sandbox.NetworkAllow] a container has no network but its
// loopback, and its main process is a network forwarder, this program's
// binary again (package sandbox/internal/netfwd): it joins the
// container's 127.0.0.1:[sandbox.ProxyPort] to a unix socket bound into
// the container, where the backend serves a [sandbox.Proxy] outside it,
// then starts the command as the sandbox user (see [Backend.Run]).
// [Backend.RunCmd] runs a [sandbox.Cmd] whose output streams as it is
// written (a long-running MCP server on stdio).
//
// # Failing closed
//
// A Backend never falls back to the host: no reachable engine, a missing
// image or a limit the engine cannot enforce is an error naming it, and so
// is a run under an allow list whose forwarder cannot run (it never gets
// another network). Close removes every container it made, and [New]
// removes what an earlier process of the same owner left behind.
package container
