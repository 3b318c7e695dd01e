// Package statedir says where clawtool keeps state of this machine: logins,
// pending approvals. State is kept out of the configuration directory that
// people copy, sync and publish.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Dir returns the directory of clawtool's state named name: on Linux and
// the BSDs clawtool/NAME under $XDG_STATE_HOME (when it is absolute), or
// under ~/.local/state; on macOS and Windows clawtool/NAME under
// [os.UserConfigDir]. It creates nothing. Name must be one path element.
func Dir(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", fmt.Errorf("statedir: %q is not one path element", name)
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "clawtool", name), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "clawtool", name), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.Join(errors.New("no state directory"), err)
	}
	return filepath.Join(home, ".local", "state", "clawtool", name), nil
}
