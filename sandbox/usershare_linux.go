package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// What a run's user namespace charges to the user who made it. The kernel
// counts inotify instances and watches, queued signals and POSIX message
// queue bytes per user, and charges what a user namespace's processes take
// to the namespace's owner as well, up to the initial namespace: for a
// root supervisor, to root, whose every process on the host draws on the
// same counts. Each level is checked against its own limit: the run's
// against the run's (its namespace's /proc/sys/user values for inotify,
// its own RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE for the others), root's
// against root's. A run whose own limits were left as the namespace starts
// them (unbounded for inotify, root's rlimits for the others) could take
// all of root's count alone, and runs whose own limits were each a fixed
// part could take it together. So every run is given a share from a
// ledger of the process, in total at most half of what the host allows
// one user: root keeps the other half, whatever the runs do.
const (
	shareInotifyInstances = iota
	shareInotifyWatches
	shareSigPending
	shareMsgQueue
	nShares
)

// shareNames name the shares in errors and in the documentation.
var shareNames = [nShares]string{"inotify instances", "inotify watches", "pending signals", "message queue bytes"}

// userShares are amounts of each share, indexed as above.
type userShares [nShares]uint64

// A shareLedger hands out shares of what the host allows one user to the
// runs under way: a run asks for an eighth of each, and is given at most
// half of what is left unheld of half the host's limit, so that the runs
// together never hold more than half and a run that comes when much is
// held still gets some. Its zero value is ready; it is safe for
// concurrent use.
type shareLedger struct {
	mu   sync.Mutex
	held userShares
	// host, when set, replaces hostUserLimits (a test's).
	host func() (userShares, error)
}

// processShares is the ledger of every run of this process, whatever
// backend value it ran on: the count the shares are taken from is the
// user's, not a backend's, so two backends each with a ledger of their own
// would hand out the host's whole limit between them.
var processShares shareLedger

// shareDivisor and poolDivisor are the parts of the host's limit a run
// asks for (an eighth) and the runs of the process may hold together (a
// half).
const (
	shareDivisor = 8
	poolDivisor  = 2
)

// take returns the shares granted to one run and the function that gives
// them back, which must be called once, after every process of the run
// has ended. A share may be zero: the runs under way hold the rest. An
// error reading the host's limits is returned, and nothing is granted.
func (l *shareLedger) take() (userShares, func(), error) {
	host := hostUserLimits
	if l.host != nil {
		host = l.host
	}
	lim, err := host()
	if err != nil {
		return userShares{}, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var got userShares
	for i, h := range lim {
		pool := h / poolDivisor
		free := uint64(0)
		if pool > l.held[i] {
			free = pool - l.held[i]
		}
		got[i] = min(h/shareDivisor, free/2)
		l.held[i] += got[i]
	}
	var once sync.Once
	return got, func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for i := range got {
				l.held[i] -= got[i]
			}
		})
	}, nil
}

// hostUserLimits returns what the host allows one user, as the count a
// run's charges land in is checked: the inotify limits of this process's
// user namespace and of the initial one, the lower of each; and this
// process's soft RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE (what a run's
// namespace takes as the limit of its creator's count), each bounded by
// the kernel's default for a user (half of kernel.threads-max, 819200
// bytes), so that a supervisor whose own limits were raised does not
// hand out more than other processes of its user have.
func hostUserLimits() (userShares, error) {
	var lim userShares
	for _, f := range []struct {
		i     int
		paths []string
	}{
		{shareInotifyInstances, []string{"/proc/sys/user/max_inotify_instances", "/proc/sys/fs/inotify/max_user_instances"}},
		{shareInotifyWatches, []string{"/proc/sys/user/max_inotify_watches", "/proc/sys/fs/inotify/max_user_watches"}},
	} {
		lim[f.i] = ^uint64(0)
		for _, p := range f.paths {
			v, err := readProcNumber(p)
			if err != nil {
				return userShares{}, err
			}
			lim[f.i] = min(lim[f.i], v)
		}
	}
	threads, err := readProcNumber("/proc/sys/kernel/threads-max")
	if err != nil {
		return userShares{}, err
	}
	for _, r := range []struct {
		i        int
		res      int
		kernelMx uint64
	}{
		{shareSigPending, unix.RLIMIT_SIGPENDING, threads / 2},
		{shareMsgQueue, unix.RLIMIT_MSGQUEUE, 819200},
	} {
		var rl unix.Rlimit
		if err := unix.Getrlimit(r.res, &rl); err != nil {
			return userShares{}, fmt.Errorf("sandbox: read this process's limit of %s: %w", shareNames[r.i], err)
		}
		lim[r.i] = min(rl.Cur, rl.Max, r.kernelMx)
	}
	return lim, nil
}

// readProcNumber reads a file of /proc/sys holding one unsigned number.
func readProcNumber(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("sandbox: read the host's per-user limits: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sandbox: read the host's per-user limits: %s: %w", path, err)
	}
	return v, nil
}
