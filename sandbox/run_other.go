//go:build !linux

package sandbox

import (
	"context"
	"io"
)

// Probe reports no layers on this platform.
func Probe() Report { return Report{} }

func run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	return nil, ErrUnsupported
}

func runStreams(ctx context.Context, p Policy, argv []string, stdin io.Reader, out streams) (*Result, error) {
	return nil, ErrUnsupported
}

func setSpares(bool) bool { return false }

func releaseSpares() {}
