//go:build !unix

package policy

import (
	"context"
	"errors"
)

// lockFile fails: the file store needs flock, which only Unix has.
func lockFile(context.Context, string) (func(), error) {
	return nil, errors.New("the approval file store needs flock, which this system lacks")
}
