//go:build !unix

package toolsearch

import "os"

// cacheOpenFlags opens a cache file for reading.
const cacheOpenFlags = os.O_RDONLY

// wordVectorsOpenFlags opens a word-vector file for reading.
const wordVectorsOpenFlags = os.O_RDONLY
