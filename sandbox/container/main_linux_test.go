package container

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// The native runs of BenchmarkBackends may leave spare helpers.
	sandbox.ReleaseSpares()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// requireNative fails (in CI) or skips unless the native backend runs a
// command here: BenchmarkBackends compares against it.
func requireNative(t testing.TB) {
	t.Helper()
	r, err := sandbox.Native.Run(context.Background(), sandbox.Policy{}, []string{"/bin/true"}, nil)
	if err = okRun(r, err); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// percentile returns the q-quantile of ds in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}

// trim shortens b for a failure message.
func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
