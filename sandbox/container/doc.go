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
// # Failing closed
//
// A Backend never falls back to the host: no reachable engine, a missing
// image or a limit the engine cannot enforce is an error naming it. It
// refuses [sandbox.NetworkAllow] (the supervisor's proxy cannot reach into
// a container without a network). Close removes every container it made,
// and [New] removes what an earlier process of the same owner left behind.
package container
