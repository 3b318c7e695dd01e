package providercall

import (
	"runtime"
	"strings"
)

// Repeat returns prefix, then n copies of elem separated by commas, then
// suffix: a response with an array of n elements, for the adapters'
// attack tests.
func Repeat(prefix, elem string, n int, suffix string) []byte {
	var b strings.Builder
	b.Grow(len(prefix) + n*(len(elem)+1) + len(suffix))
	b.WriteString(prefix)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(elem)
	}
	b.WriteString(suffix)
	return []byte(b.String())
}

// Allocated returns the bytes fn allocates (in all goroutines, so a test
// that measures with it must not run in parallel with others).
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
