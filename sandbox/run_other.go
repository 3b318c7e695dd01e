//go:build !linux

package sandbox

import (
	"context"
	"io"
	"time"
)

// Probe reports no layers on this platform.
func Probe() Report { return Report{} }

func (n *Native) run(ctx context.Context, p Policy, argv []string, stdin io.Reader, out streams) (*Result, error) {
	return nil, ErrUnsupported
}

// sparePool holds nothing on this platform.
type sparePool struct {
	max   int
	idle  time.Duration
	hooks *nativeHooks
}

func (p *sparePool) configure(o NativeOptions) { p.max, p.idle = o.Spares, o.Idle }

func (p *sparePool) close() {}

type nativeHooks struct{}
