//go:build !unix

package policy

import "errors"

// lockFile fails: the file store needs flock, which only Unix has.
func lockFile(string) (func(), error) {
	return nil, errors.New("the approval file store needs flock, which this system lacks")
}
