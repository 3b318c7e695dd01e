package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRunsLeaveRootItsCounts: inotify instances, queued real-time signals
// and POSIX message queue bytes are counted per user, and what a user
// namespace's processes take is charged to the user who made the
// namespace too: root, the supervisor. Each row starts runs that each take
// all they can of one count and hold it, then has root (this test process)
// try one of its own.
//
// The controls show the attacks work without the defence: one run whose
// namespace keeps the limits it starts with (unbounded inotify, root's
// own RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE) took root's whole count, as
// every run did before; nine runs each given an eighth of the host's
// limit (the defence of the round before, inotify only, with no bound
// across runs) took it together. With the defence each run's share comes
// from a ledger of half the host's limit, and root still gets one while
// the runs hold all they could. Message queues are tried without Landlock,
// which refuses a run to make one at all (the mqueue file system is not
// among the paths it grants): the count stays bounded without it.
func TestRunsLeaveRootItsCounts(t *testing.T) {
	f := newFixture(t)
	host, err := hostUserLimits()
	if err != nil {
		t.Fatal(err)
	}
	var sig, mq unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_SIGPENDING, &sig))
	must(t, unix.Getrlimit(unix.RLIMIT_MSGQUEUE, &mq))
	unbounded := func() userShares { return userShares{1<<31 - 1, 1<<31 - 1, sig.Cur, mq.Cur} }
	eighth := func() userShares {
		var s userShares
		for i, h := range host {
			s[i] = h / shareDivisor
		}
		return s
	}
	type kind struct {
		name    string
		share   int           // the share that bounds it
		without []Layer       // layers the runs go without
		root    func() error  // root takes one, and gives it back
		counted func(int) int // what n held is of the share's unit
	}
	kinds := []kind{
		{name: "inotify", share: shareInotifyInstances, root: rootInotify, counted: func(n int) int { return n }},
		{name: "signals", share: shareSigPending, root: rootSignal, counted: func(n int) int { return n }},
		// A queue of the defaults (10 messages of 8 KiB) is charged its
		// messages' bytes and its bookkeeping: at least 81,920.
		{name: "queues", share: shareMsgQueue, without: []Layer{LayerLandlock}, root: rootQueue, counted: func(n int) int { return n * 81920 }},
	}
	for _, k := range kinds {
		for _, row := range []struct {
			name     string
			runs     int
			counts   func() userShares // the control's; nil for the ledger
			rootFail bool
		}{
			{"control: one run, its namespace's limits as they start", 1, unbounded, true},
			{"one run", 1, nil, false},
			{"control: nine runs, an eighth each", 9, eighth, true},
			{"nine runs", 9, nil, false},
		} {
			t.Run(k.name+"/"+row.name, func(t *testing.T) {
				hooks := &nativeHooks{ledger: &shareLedger{}, userCounts: row.counts}
				n := newTestNative(t, NativeOptions{}, hooks)
				p := f.policy()
				p.Without = k.without
				stopDir, err := os.MkdirTemp(f.base, "stop-")
				must(t, err)
				must(t, os.Chmod(stopDir, 0o755))
				p.ReadOnly = append(p.ReadOnly, stopDir)
				stop := filepath.Join(stopDir, "stop")
				outs := make([]*lockedBuffer, row.runs)
				done := make(chan error, row.runs)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				for i := range outs {
					outs[i] = &lockedBuffer{}
					cmd := CommandContext(ctx, p, f.attacker, "counthold", k.name, stop)
					cmd.Backend, cmd.Stdout = n, outs[i]
					go func() {
						err := cmd.Run()
						if err != nil && cmd.Result != nil {
							err = fmt.Errorf("%w: %s, stdout %q, stderr %q", err, cmd.Result.Outcome, outs[i].String(), cmd.Result.Stderr)
						}
						done <- err
					}()
				}
				ended := false
				end := func() {
					if ended {
						return
					}
					ended = true
					os.WriteFile(stop, nil, 0o644)
					for range outs {
						if err := <-done; err != nil {
							t.Errorf("run: %v", err)
						}
					}
				}
				defer end()
				held := regexp.MustCompile(`held (\d+) \(`)
				total := 0
				for i, out := range outs {
					for deadline := time.Now().Add(time.Minute); !held.MatchString(out.String()); time.Sleep(20 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Fatalf("run %d never said what it held: %q", i, out.String())
						}
					}
					v, _ := strconv.Atoi(held.FindStringSubmatch(out.String())[1])
					total += k.counted(v)
				}
				// Other processes of root's give back what they held now
				// and then, which the runs take back within milliseconds:
				// root tries a few times.
				var rootErr error
				failed := 0
				for range 5 {
					if err := k.root(); err != nil {
						rootErr = err
						failed++
					}
					time.Sleep(20 * time.Millisecond)
				}
				report := fmt.Sprintf("%d runs held %d of %s in all (host's limit %d)", row.runs, total, shareNames[k.share], host[k.share])
				end()
				switch {
				case row.rootFail && failed == 0:
					t.Fatalf("%s and root could still take one each of 5 tries: the attack shows nothing here", report)
				case !row.rootFail && failed > 0:
					t.Fatalf("%s and root could not take one in %d of 5 tries: %v", report, failed, rootErr)
				case !row.rootFail && (total == 0 || uint64(total) > host[k.share]/poolDivisor):
					t.Fatalf("%s: want more than none and at most half the host's limit", report)
				}
				t.Log(report)
			})
		}
	}
}

// rootInotify makes an inotify instance as root and closes it.
func rootInotify() error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// rootSignal queues a real-time signal as root, to this thread, which
// blocks it, then takes it off the queue and unblocks it. The goroutine
// unlocks its thread again rather than ending it: a thread that ends
// takes its children's parent with it, and a child started with a parent
// death signal (the forker, every helper) is killed.
func rootSignal() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n, err := queueSignals(1)
	var set unix.Sigset_t
	set.Val[(queueSignal-1)/64] |= 1 << ((queueSignal - 1) % 64)
	if n == 1 {
		var ts unix.Timespec
		if _, _, e := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), 0, uintptr(unsafe.Pointer(&ts)), 8, 0, 0); e != 0 {
			panic(fmt.Sprintf("taking back the signal queued: %v", e))
		}
	}
	if err := unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil); err != nil {
		panic(err)
	}
	return err
}

// rootQueue makes a POSIX message queue of the defaults as root, then
// closes and removes it.
func rootQueue() error {
	name, err := unix.BytePtrFromString(fmt.Sprintf("clawtool-root-%d", os.Getpid()))
	if err != nil {
		return err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o600, 0, 0, 0)
	if e != 0 {
		return e
	}
	unix.Close(int(fd))
	unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
	return nil
}

// TestShareLedger: what the ledger grants, in turn, to runs that come
// while the earlier ones hold their shares, and after some give theirs
// back; a host limit it cannot read grants nothing.
func TestShareLedger(t *testing.T) {
	limit := func(v uint64) func() (userShares, error) {
		return func() (userShares, error) { return userShares{v, v * 64, v * 750, v * 6400}, nil }
	}
	for _, tc := range []struct {
		name  string
		host  uint64
		runs  int
		back  []int    // runs that give their shares back, after all took
		then  int      // runs that come after those gave back
		want  []uint64 // the first share granted to each run, in turn
		total uint64   // what is held of the first share at the end
	}{
		{"an eighth each while half is free", 128, 3, nil, 0, []uint64{16, 16, 16}, 48},
		{"then half of what is left", 128, 9, nil, 0, []uint64{16, 16, 16, 8, 4, 2, 1, 0, 0}, 63},
		{"given back, granted again", 128, 4, []int{0, 1}, 2, []uint64{16, 16, 16, 8, 16, 12}, 52},
		{"a host limit under eight", 7, 2, nil, 0, []uint64{0, 0}, 0},
		{"one", 1, 1, nil, 0, []uint64{0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &shareLedger{host: limit(tc.host)}
			var got []uint64
			var backs []func()
			take := func() {
				s, back, err := l.take()
				if err != nil {
					t.Fatal(err)
				}
				hl, _ := limit(tc.host)()
				for i := range s {
					if s[i] > hl[i]/shareDivisor {
						t.Errorf("share of %s: %d, over an eighth of the host's %d", shareNames[i], s[i], hl[i])
					}
				}
				got = append(got, s[0])
				backs = append(backs, back)
			}
			for range tc.runs {
				take()
			}
			for _, i := range tc.back {
				backs[i]()
				backs[i]() // a second call gives nothing back twice
			}
			for range tc.then {
				take()
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("granted %v, want %v", got, tc.want)
			}
			if l.held[0] != tc.total {
				t.Errorf("held %d at the end, want %d", l.held[0], tc.total)
			}
			if l.held[0] > tc.host/poolDivisor {
				t.Errorf("held %d, over half the host's %d", l.held[0], tc.host)
			}
		})
	}
	t.Run("unreadable host limits", func(t *testing.T) {
		l := &shareLedger{host: func() (userShares, error) { return userShares{}, errors.New("no /proc") }}
		if _, _, err := l.take(); err == nil || !strings.Contains(err.Error(), "no /proc") {
			t.Fatalf("take: %v, want the error", err)
		}
		if l.held != (userShares{}) {
			t.Fatalf("held %v after an error", l.held)
		}
	})
}
