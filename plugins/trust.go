package plugins

import (
	"fmt"
	"os"
)

// checkTrustedFile is checkTrusted for the file name names (a symbolic
// link followed: the file it names counts).
func checkTrustedFile(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", name)
	}
	return checkTrusted(name, fi)
}
