package sandbox

import (
	"context"
	"errors"
	"io"
)

// A Backend runs commands under a [Policy] and classifies how they ended.
// [Native] is the Linux sandbox of [Run]; a [*github.com/miniopenclaw/tool/sandbox/container.Backend]
// runs commands in containers of a Docker-compatible engine. Both honour the same Policy
// and the same [Limits] and classify runs the same way (see [Outcome]), so
// code written against a Backend does not care which one it has.
type Backend interface {
	// Run runs argv under p with stdin (nil means empty) and waits for it,
	// with the contract of the package-level [Run].
	Run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error)
}

// Native is the Linux backend: [Run] as a [Backend]. It refuses a policy
// that names an image.
var Native Backend = nativeBackend{}

type nativeBackend struct{}

func (nativeBackend) Run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	if p.Image != "" {
		return nil, errNativeImage
	}
	return run(ctx, p, argv, stdin)
}

var errNativeImage = errors.New("sandbox: the policy names an image, which only a container backend can run; refusing to run it on the host")
