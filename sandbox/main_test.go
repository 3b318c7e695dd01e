package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}
