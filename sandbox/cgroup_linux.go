package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// leafPrefix starts the name of every run's cgroup leaf; the creating
// process's id follows, so that leaves of a crashed process can be found.
const leafPrefix = "clawtool-sandbox-"

// cgroupHost says where the runs' cgroup leaves go: under the process's own
// cgroup, in the cgroup v2 hierarchy when it delegates memory and pids
// there, else in the v1 memory and pids hierarchies.
type cgroupHost struct {
	version      int    // 0 (none), 1 or 2
	parent       string // v2: the directory the leaves go in
	memory, pids string // v1: the directories the leaves go in
	detail       string // what was found, or why there is none
}

var (
	cgroupOnce sync.Once
	cgroups    cgroupHost
	leafSeq    atomic.Int64
)

// hostCgroups finds the host's cgroups once per process, and removes the
// leaves that crashed processes left behind.
func hostCgroups() cgroupHost {
	cgroupOnce.Do(func() {
		self, _ := os.ReadFile("/proc/self/cgroup")
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		cgroups = findCgroups(self, mounts, writableCgroup)
		for _, dir := range []string{cgroups.parent, cgroups.memory, cgroups.pids} {
			if dir != "" {
				removeStaleLeaves(dir)
			}
		}
	})
	return cgroups
}

// findCgroups reads /proc/self/cgroup and /proc/self/mountinfo; usable says
// whether leaves can be made in a directory.
func findCgroups(self, mountinfo []byte, usable func(dir string, controllers ...string) error) cgroupHost {
	paths := map[string]string{} // controller ("" for v2) -> this process's cgroup path
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	dirs := map[string]string{} // controller ("" for v2) -> directory of this process's cgroup
	for _, line := range strings.Split(string(mountinfo), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, point := f[3], unescapeMount(f[4])
		var controllers []string
		switch g[0] {
		case "cgroup2":
			controllers = []string{""}
		case "cgroup":
			for _, o := range strings.Split(g[2], ",") {
				if o == "memory" || o == "pids" {
					controllers = append(controllers, o)
				}
			}
		}
		for _, c := range controllers {
			p, ok := paths[c]
			if !ok {
				continue
			}
			rel, ok := strings.CutPrefix(p, root)
			if !ok && root != "/" {
				continue // this process's cgroup is outside what is mounted here
			}
			if root == "/" {
				rel = p
			}
			if _, seen := dirs[c]; !seen {
				dirs[c] = filepath.Join(point, rel)
			}
		}
	}
	var why []string
	if d, ok := dirs[""]; ok {
		err := usable(d, "memory", "pids")
		if err == nil {
			return cgroupHost{version: 2, parent: d, detail: "cgroup v2 memory and pids, leaves under " + d}
		}
		why = append(why, "v2: "+err.Error())
	}
	mem, okm := dirs["memory"]
	pids, okp := dirs["pids"]
	if okm && okp {
		err := usable(mem)
		if err == nil {
			err = usable(pids)
		}
		if err == nil {
			return cgroupHost{version: 1, memory: mem, pids: pids, detail: "cgroup v1 memory and pids, leaves under " + mem + " and " + pids}
		}
		why = append(why, "v1: "+err.Error())
	} else {
		why = append(why, "v1: no memory and pids hierarchies")
	}
	return cgroupHost{detail: "no writable cgroup with memory and pids (" + strings.Join(why, "; ") + "): RLIMIT_DATA and RLIMIT_NPROC instead"}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// writableCgroup checks that dir takes leaves: for v2 it delegates the
// controllers to its children; a leaf can be made and removed.
func writableCgroup(dir string, controllers ...string) error {
	if len(controllers) > 0 {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
		if err != nil {
			return err
		}
		have := strings.Fields(string(b))
		for _, c := range controllers {
			if !containsString(have, c) {
				return fmt.Errorf("%s does not delegate %s to its children", dir, c)
			}
		}
	}
	probe := filepath.Join(dir, fmt.Sprintf("%s%d-probe", leafPrefix, os.Getpid()))
	err := os.Mkdir(probe, 0o755)
	if errors.Is(err, os.ErrExist) {
		// Left by a crashed process that had this process's id.
		if err = removeLeaf(probe); err == nil {
			err = os.Mkdir(probe, 0o755)
		}
	}
	if err != nil {
		return err
	}
	return unix.Rmdir(probe)
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A leaf is one run's cgroup (one directory per v1 hierarchy).
type leaf struct {
	version      int
	memory, pids string // the same directory under v2
}

// newLeaf makes a run's leaf with its memory and process limits.
func (h cgroupHost) newLeaf(l Limits) (*leaf, error) {
	name := fmt.Sprintf("%s%d-%d", leafPrefix, os.Getpid(), leafSeq.Add(1))
	lf := &leaf{version: h.version}
	var files [][2]string
	switch h.version {
	case 2:
		lf.memory = filepath.Join(h.parent, name)
		lf.pids = lf.memory
		if err := os.Mkdir(lf.memory, 0o755); err != nil {
			return nil, err
		}
		files = [][2]string{
			{filepath.Join(lf.memory, "memory.max"), strconv.FormatInt(l.Memory, 10)},
			{filepath.Join(lf.memory, "memory.swap.max"), "0"},
			{filepath.Join(lf.pids, "pids.max"), strconv.Itoa(l.Processes)},
		}
	case 1:
		lf.memory, lf.pids = filepath.Join(h.memory, name), filepath.Join(h.pids, name)
		if err := os.Mkdir(lf.memory, 0o755); err != nil {
			return nil, err
		}
		if err := os.Mkdir(lf.pids, 0o755); err != nil {
			unix.Rmdir(lf.memory)
			return nil, err
		}
		files = [][2]string{
			{filepath.Join(lf.memory, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
			{filepath.Join(lf.pids, "pids.max"), strconv.Itoa(l.Processes)},
		}
		// No swap beyond the limit, where the kernel accounts swap.
		if _, err := os.Stat(filepath.Join(lf.memory, "memory.memsw.limit_in_bytes")); err == nil {
			files = append(files, [2]string{filepath.Join(lf.memory, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)})
		}
	default:
		return nil, errors.New("no cgroup")
	}
	for _, f := range files {
		if err := os.WriteFile(f[0], []byte(f[1]), 0); err != nil {
			lf.remove()
			return nil, fmt.Errorf("set %s: %w", filepath.Base(f[0]), err)
		}
	}
	return lf, nil
}

// admitHelper raises the leaf's process limit by the tasks in it, those of
// a helper that has just entered it, so that the command has the
// processes pids.max promises beside them. Called when the helper is
// ready and before the command exists. From Ready on the helper makes raw
// system calls only (TestRunRaw), so its runtime starts a thread only
// when its goroutine, preempted after a long call, hands its processor
// over and finds no thread idle (started by the template thread, see
// helper's pinThread): rare, and then counted against the command, never
// let past the limit. A helper that becomes the command takes its
// threads with it: the run then sets the limit back (limitProcesses) once
// the command started.
func (lf *leaf) admitHelper(processes int) error {
	b, err := os.ReadFile(filepath.Join(lf.pids, "pids.current"))
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pids.current: %w", err)
	}
	return lf.limitProcesses(processes + n)
}

// limitProcesses sets the leaf's pids.max to n.
func (lf *leaf) limitProcesses(n int) error {
	return os.WriteFile(filepath.Join(lf.pids, "pids.max"), []byte(strconv.Itoa(n)), 0)
}

// outcome classifies a run that ended badly from the leaf's counters: an
// OOM kill means the memory limit; a refused fork means the process limit.
func (lf *leaf) outcome() (oom, pidsMax bool) {
	switch lf.version {
	case 2:
		oom = counter(filepath.Join(lf.memory, "memory.events"), "oom_kill") > 0 ||
			counter(filepath.Join(lf.memory, "memory.events"), "oom_group_kill") > 0
	case 1:
		oom = counter(filepath.Join(lf.memory, "memory.oom_control"), "oom_kill") > 0
	}
	pidsMax = counter(filepath.Join(lf.pids, "pids.events"), "max") > 0
	return oom, pidsMax
}

// counter reads the value of key in a flat-keyed cgroup file, or 0.
func counter(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove kills whatever is left in the leaf and removes it.
func (lf *leaf) remove() error {
	var err error
	for _, dir := range uniq(lf.memory, lf.pids) {
		if e := removeLeaf(dir); e != nil && err == nil {
			err = e
		}
	}
	return err
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// removeLeaf kills the processes in dir and removes it, retrying a bounded
// number of times while killed processes finish exiting.
func removeLeaf(dir string) error {
	var err error
	for try := range 200 {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, e := strconv.Atoi(f); e == nil && pid > 0 {
					unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		time.Sleep(time.Duration(try+1) * 100 * time.Microsecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// removeStaleLeaves removes the leaves under parent whose creating process
// is gone. It runs before this process makes any leaf, so leaves named
// with this process's id were left by an earlier process that had it.
func removeStaleLeaves(parent string) {
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), leafPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid != os.Getpid() && unix.Kill(pid, 0) == nil {
			continue
		}
		removeLeaf(filepath.Join(parent, e.Name()))
	}
}
