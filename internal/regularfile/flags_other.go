//go:build !unix

package regularfile

// openFlags are added to every open; elsewhere than Unix, none.
const openFlags = 0
