package sandbox

import (
	"runtime"
	"sync"
)

// The kernel sends a child's parent death signal when the thread that
// started it ends, not the process: a goroutine of any package that ends
// while locked to its thread (runtime.LockOSThread) ends the thread. The
// forker and every helper are started with SIGKILL as that signal (they
// must die with the program), and the forker's helpers are its parent's
// children (CLONE_PARENT), so a forker or helper started from such a
// thread died with it, and every run whose helper it was ended "killed by
// signal killed" mid-command. They are started from one spawning thread
// instead: a goroutine locked to it, which ends (and the thread with it)
// only once every child started from it, and every child of theirs made
// with CLONE_PARENT, has been reaped, so that a program that runs nothing
// keeps no goroutine of the package.
var spawnThread struct {
	mu sync.Mutex
	do chan func() // nil while no goroutine holds the thread
	// holds counts the children of the thread not reaped yet, and the
	// starts under way.
	holds int
}

// spawn runs start on the spawning thread and returns when it has
// returned. When start started a child (err is nil), release gives the
// thread up for it and must be called once the child has been reaped
// (later calls do nothing); otherwise release is nil. start must block on
// nothing but its own fork and exec: the starts of the whole process wait
// for each other there.
func spawn(start func() error) (release func(), err error) {
	s := &spawnThread
	s.mu.Lock()
	if s.do == nil {
		s.do = make(chan func())
		go spawnLoop(s.do)
	}
	s.holds++
	do := s.do
	s.mu.Unlock()
	done := make(chan struct{})
	do <- func() {
		defer close(done)
		err = start()
	}
	<-done
	release = releaseSpawnThread()
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// holdSpawnThread holds the spawning thread for a grandchild that is its
// child through CLONE_PARENT (a helper the forker clones). The caller
// holds it already for the child that clones (the forker), so the thread
// is the same. release is as spawn's.
func holdSpawnThread() (release func()) {
	s := &spawnThread
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
	return releaseSpawnThread()
}

// releaseSpawnThread returns a function that gives one hold up, once; the
// last ends the spawning goroutine.
func releaseSpawnThread() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s := &spawnThread
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.holds--; s.holds == 0 {
				close(s.do)
				s.do = nil
			}
		})
	}
}

// spawnLoop runs what spawn sends, on a thread of its own, until do is
// closed; the thread ends with it, and no child of it is left.
func spawnLoop(do chan func()) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	for f := range do {
		f()
	}
}
