//go:build !unix

package toolsearch

// noFollow is nothing where links are not followed by open.
const noFollow = 0
