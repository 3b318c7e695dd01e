//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(attackEnv) == "1" {
		os.Exit(attackMain(os.Args[1:]))
	}
	if os.Getenv(emfileEnv) == "1" {
		os.Exit(emfileMain())
	}
	code := m.Run()
	// Spares are this process's children but carry no marker; the
	// default backend's are released here so that the goroutine check
	// sees none of their starts (every other backend of the tests is
	// closed by its test).
	DefaultNative().Close()
	if n := leftovers(testMark()); n > 0 {
		fmt.Fprintf(os.Stderr, "%d processes carrying this test's marker are still running\n", n)
		killLeftovers(testMark())
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
