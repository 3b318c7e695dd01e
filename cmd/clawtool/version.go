package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func runVersion(_ context.Context, e *env, args []string) int {
	fs := newFlags(e, "version", "", `Version prints the version of the clawtool module the program was built
from ("(devel)" for a build inside a checkout), the commit when the build
recorded one, and the Go version and platform it was built with.`)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(e.stdout, versionText(bi, runtime.GOOS+"/"+runtime.GOARCH))
	return exitOK
}

// versionText describes a build in one line:
//
//	clawtool v1.2.0 (go1.26.8 linux/amd64)
//	clawtool (devel) commit 0123456789ab, modified (go1.26.8 linux/amd64)
//
// bi may be nil (a binary built without module support).
func versionText(bi *debug.BuildInfo, platform string) string {
	if bi == nil {
		return fmt.Sprintf("clawtool (unknown) (%s %s)", runtime.Version(), platform)
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	commit := ""
	if revision != "" {
		commit = " commit " + revision[:min(len(revision), 12)]
		if modified == "true" {
			commit += ", modified"
		}
	}
	return fmt.Sprintf("clawtool %s%s (%s %s)", version, commit, bi.GoVersion, platform)
}
