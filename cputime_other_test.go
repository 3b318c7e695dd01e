//go:build !unix

package tool_test

import "time"

// cpuTime reports that the CPU time is unknown here; benchmarks fall back
// to wall-clock time.
func cpuTime() (time.Duration, bool) { return 0, false }
