package sandbox

// SpareEnv turns spare helpers off for the whole process when it is "0" at
// the first run (see [SetSpares]).
const SpareEnv = "CLAWTOOL_SANDBOX_SPARE"

// SetSpares turns the native backend's spare helpers on or off for this
// process and reports whether they were on. A spare is a helper already
// started for the namespaces, id mapping and standard input kind of an
// earlier run, blocked before reading any configuration, that the next run
// with the same shape claims so as not to pay the clone, the execve and the
// Go runtime's start. Every spare serves exactly one run. Spares are on
// unless the environment variable [SpareEnv] is "0"; turning them off
// releases the idle ones (see [ReleaseSpares]). On platforms without the
// native sandbox SetSpares does nothing and reports false.
func SetSpares(on bool) (was bool) { return setSpares(on) }

// ReleaseSpares kills and reaps every idle spare helper, waits for the
// spares being started to end, and kills those too; it also waits for the
// helpers of ended runs that are still exiting in the background (a helper
// that forked its command reports how it ended first) and for their
// cgroup leaves to be removed. Spares stay on: the next run of each shape
// starts cold and arms a new spare. A program that checks for leftover
// processes, goroutines or cgroup leaves calls it first; nothing else
// needs it, since a spare dies with the program (and by itself after
// 30 idle seconds).
func ReleaseSpares() { releaseSpares() }
