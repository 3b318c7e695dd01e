//go:build race

package sandbox

// raceEnabled reports a -race build, whose programs need far more address
// space than RLIMIT_DATA lets through.
const raceEnabled = true
