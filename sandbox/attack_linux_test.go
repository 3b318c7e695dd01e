package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the attacker: TestMain hands it to attackMain
// when attackEnv is set. An attack prints "OK <detail>" and exits 0 when it
// worked, or "BLOCKED <error>" and exits 3 when the system stopped it.
const attackEnv = "SBX_ATTACK"

// markEnv carries the test process's marker into every attacker, so that a
// scan of /proc can find any process a test left behind.
const markEnv = "SBX_MARK"

func attackMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("BLOCKED no attack named")
		return 2
	}
	fn, ok := attacks[args[0]]
	if !ok {
		fmt.Println("BLOCKED unknown attack", args[0])
		return 2
	}
	detail, err := fn(args[1:])
	if err != nil {
		fmt.Printf("BLOCKED %v\n", err)
		return 3
	}
	fmt.Printf("OK %s\n", detail)
	return 0
}

var attacks = map[string]func(args []string) (string, error){
	"read": func(a []string) (string, error) {
		b, err := os.ReadFile(a[0])
		return fmt.Sprintf("read %d bytes", len(b)), err
	},
	"write": func(a []string) (string, error) {
		return "wrote", os.WriteFile(a[0], []byte("pwned\n"), 0o644)
	},
	"append": func(a []string) (string, error) {
		f, err := os.OpenFile(a[0], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("pwned\n")
		return "appended", err
	},
	"writesize": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[1])
		f, err := os.Create(a[0])
		if err != nil {
			return "", err
		}
		defer f.Close()
		chunk := make([]byte, 64<<10)
		for written := 0; written < n; written += len(chunk) {
			if _, err := f.Write(chunk); err != nil {
				return "", fmt.Errorf("after %d bytes: %w", written, err)
			}
		}
		return "wrote " + a[1], nil
	},
	"manyfiles": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		dir, err := os.MkdirTemp("", "many")
		if err != nil {
			return "", err
		}
		for i := range n {
			f, err := os.Create(fmt.Sprintf("%s/f%d", dir, i))
			if err != nil {
				return "", fmt.Errorf("after %d files: %w", i, err)
			}
			f.Close()
		}
		return "created " + a[0], nil
	},
	"fifos": func(a []string) (string, error) {
		// fifos N: N fifos with 200-byte names, 10 directories of
		// 200-byte names deep in the working directory: what the apply
		// step refuses, each listed with its long path.
		n, _ := strconv.Atoi(a[0])
		dir := "."
		for i := range 10 {
			dir += "/" + strings.Repeat(string(rune('a'+i)), 200)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for i := range n {
			if err := syscall.Mkfifo(fmt.Sprintf("%s/%0200d", dir, i), 0o644); err != nil {
				return "", fmt.Errorf("after %d fifos: %w", i, err)
			}
		}
		return "made " + a[0] + " fifos", nil
	},
	"openmany": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		var fs []*os.File
		defer func() {
			for _, f := range fs {
				f.Close()
			}
		}()
		for i := range n {
			f, err := os.Open("/dev/null")
			if err != nil {
				return "", fmt.Errorf("after %d: %w", i, err)
			}
			fs = append(fs, f)
		}
		return "opened " + a[0], nil
	},
	"mknod": func(a []string) (string, error) {
		return "made node", unix.Mknod(a[0], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 1)))
	},
	"remount": func([]string) (string, error) {
		return "remounted / read-write", unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND, "")
	},
	"nesteduserns": func(a []string) (string, error) {
		cmd := exec.Command(a[0])
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS}
		return "created a user namespace", cmd.Run()
	},
	"tcp": func(a []string) (string, error) {
		c, err := net.DialTimeout("tcp", a[0], 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Write([]byte("x"))
		c.Close()
		return "connected", nil
	},
	"mptcp": func(a []string) (string, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		port, _ := strconv.Atoi(a[0])
		return "connected over MPTCP", unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	},
	"udp": func(a []string) (string, error) {
		c, err := net.Dial("udp", a[0])
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte("exfiltrated"))
		return "sent a datagram", err
	},
	"netlink": func([]string) (string, error) {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
		if err == nil {
			unix.Close(fd)
		}
		return "opened a netlink socket", err
	},
	"listen": func([]string) (string, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		l.Close()
		return "listening", nil
	},
	"socket": func(a []string) (string, error) {
		family, _ := strconv.Atoi(a[0])
		typ, _ := strconv.Atoi(a[1])
		proto, _ := strconv.Atoi(a[2])
		fd, err := unix.Socket(family, typ, proto)
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		return "a socket " + strings.Join(a, " "), nil
	},
	"socketpair": func(a []string) (string, error) {
		family, _ := strconv.Atoi(a[0])
		fds, err := unix.Socketpair(family, unix.SOCK_STREAM, 0)
		if err != nil {
			return "", err
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		return "a socket pair of family " + a[0], nil
	},
	"unix": func(a []string) (string, error) {
		c, err := net.Dial("unix", a[0])
		if err != nil {
			return "", err
		}
		c.Write([]byte("x"))
		c.Close()
		return "connected to " + a[0], nil
	},
	"spawn": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		var procs []*os.Process
		defer func() {
			for _, p := range procs {
				p.Kill()
				p.Wait()
			}
		}()
		for i := range n {
			p, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
			if err != nil {
				return "", fmt.Errorf("after %d processes: %w", i, err)
			}
			procs = append(procs, p)
		}
		return fmt.Sprintf("spawned %d", n), nil
	},
	"alloc": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("allocated %d MiB", n), nil
	},
	"spin": func(a []string) (string, error) {
		d, _ := time.ParseDuration(a[0])
		var ru unix.Rusage
		for {
			unix.Getrusage(unix.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
				return "spun " + a[0], nil
			}
			for range 1_000_000 {
			}
		}
	},
	"interfaces": func([]string) (string, error) {
		// Succeeds when an interface other than loopback is visible: a way
		// out exists.
		b, err := os.ReadFile("/proc/net/dev")
		if err != nil {
			return "", err
		}
		var names []string
		for _, l := range strings.Split(string(b), "\n")[2:] {
			if n, _, ok := strings.Cut(l, ":"); ok {
				names = append(names, strings.TrimSpace(n))
			}
		}
		for _, n := range names {
			if n != "lo" {
				return "interfaces " + strings.Join(names, ","), nil
			}
		}
		return "", fmt.Errorf("only %v: network is unreachable", names)
	},
	"sleep": func(a []string) (string, error) {
		time.Sleep(time.Hour)
		return "", nil
	},
	"flood": func([]string) (string, error) {
		line := []byte(strings.Repeat("y", 1023) + "\n")
		for {
			if _, err := os.Stdout.Write(line); err != nil {
				return "", err
			}
		}
	},
	"allocmany": func(a []string) (string, error) {
		// N processes each allocate M MiB and hold it until all have: what
		// a per-process RLIMIT_DATA lets through.
		n, _ := strconv.Atoi(a[0])
		var cmds []*exec.Cmd
		for range n {
			cmd := exec.Command("/proc/self/exe", "allochold", a[1])
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				return "", err
			}
			cmds = append(cmds, cmd)
		}
		var first error
		for _, cmd := range cmds {
			if err := cmd.Wait(); err != nil && first == nil {
				first = err
			}
		}
		return fmt.Sprintf("%d processes allocated %s MiB each", n, a[1]), first
	},
	"allochold": func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(time.Second)
		return fmt.Sprintf("held %d MiB", len(b)>>20), nil
	},
	"background": func(a []string) (string, error) {
		// Leave a daemonised child holding stdout, then exit.
		cmd := exec.Command("/proc/self/exe", "sleep", a[0])
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return "", err
		}
		return fmt.Sprintf("left pid %d behind", cmd.Process.Pid), nil
	},
	"env": func(a []string) (string, error) {
		if v, ok := os.LookupEnv(a[0]); ok {
			return "saw " + a[0] + "=" + v, nil
		}
		return "", fmt.Errorf("%s not in the environment", a[0])
	},
	"procenv": func(a []string) (string, error) {
		b, err := os.ReadFile("/proc/" + a[0] + "/environ")
		return fmt.Sprintf("read %d bytes of the agent's environment", len(b)), err
	},
	"kill0": func(a []string) (string, error) {
		pid, _ := strconv.Atoi(a[0])
		return "signalled the agent", unix.Kill(pid, 0)
	},
	"ptrace": func(a []string) (string, error) {
		pid, _ := strconv.Atoi(a[0])
		// SEIZE does not stop the tracee; the tracer's exit detaches.
		_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, 0, 0, 0)
		if errno != 0 {
			return "", errno
		}
		return "attached to the agent", nil
	},
	"syscalls": func([]string) (string, error) {
		// Each call either reaches the kernel (any errno but EPERM, or
		// success) or is denied with EPERM by the filter.
		var p [120]byte
		calls := []struct {
			name string
			fn   func() syscall.Errno
		}{
			{"io_uring_setup", func() syscall.Errno {
				_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
				return e
			}},
			{"bpf", func() syscall.Errno { _, _, e := unix.Syscall(unix.SYS_BPF, 1<<20, 0, 0); return e }},
			{"userfaultfd", func() syscall.Errno { _, _, e := unix.Syscall(unix.SYS_USERFAULTFD, 1<<20, 0, 0); return e }},
			{"perf_event_open", func() syscall.Errno {
				_, _, e := unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0, 0)
				return e
			}},
			{"keyctl", func() syscall.Errno { _, _, e := unix.Syscall(unix.SYS_KEYCTL, 1<<20, 0, 0); return e }},
			{"setns", func() syscall.Errno { _, _, e := unix.Syscall(unix.SYS_SETNS, ^uintptr(0), 0, 0); return e }},
			{"kexec_load", func() syscall.Errno { _, _, e := unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 1<<30, 0, 0); return e }},
		}
		calls = append(calls, legacySyscalls(&p)...)
		var reached, denied []string
		for _, c := range calls {
			if e := c.fn(); e == unix.EPERM {
				denied = append(denied, c.name)
			} else {
				reached = append(reached, c.name)
			}
		}
		if len(reached) > 0 {
			return "reached " + strings.Join(reached, ","), nil
		}
		return "", fmt.Errorf("all denied: %s: %w", strings.Join(denied, ","), unix.EPERM)
	},
	"waitfor": func(a []string) (string, error) {
		// Says "waiting" on stdout and waits until the file a[0]
		// exists, at most a minute.
		fmt.Println("waiting")
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(a[0]); err == nil {
				return "the file appeared", nil
			}
		}
		return "", errors.New("the file never appeared")
	},
	"counthold": func(a []string) (string, error) {
		// Takes as much of one per-user count as the kernel gives (a[0]:
		// inotify instances, queued real-time signals, or POSIX message
		// queues of the default size), says how much on stdout ("held N
		// (why it stopped)"), and holds it until the file a[1] exists,
		// at most a minute, taking every few milliseconds whatever other
		// processes of the count's user gave back meanwhile.
		var take func(int) (int, error)
		switch a[0] {
		case "inotify":
			take = func(max int) (int, error) {
				for n := 0; n < max; n++ {
					if _, err := unix.InotifyInit1(0); err != nil {
						return n, err
					}
				}
				return max, nil
			}
		case "signals":
			runtime.LockOSThread() // the signals are queued to this thread
			take = queueSignals
		case "queues":
			take = openQueues
		default:
			return "", fmt.Errorf("no count %q", a[0])
		}
		const max = 1 << 20
		n, err := take(max)
		fmt.Printf("held %d (%v)\n", n, err)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && n < max; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(a[1]); err == nil {
				break
			}
			more, _ := take(max - n)
			n += more
		}
		return fmt.Sprintf("held %d %s", n, a[0]), nil
	},
	"newsyscall": func([]string) (string, error) {
		// The first number above the filter's table (file_getattr on
		// Linux 6.17 with a table that ends at 467): a call the kernel
		// knows and the filter did not model. An invalid descriptor and
		// no path make the kernel answer EBADF, EFAULT or EINVAL, never
		// ENOSYS, when the call reaches it.
		nr := uintptr(seccompTableMax() + 1)
		_, _, e := unix.Syscall6(nr, ^uintptr(0), 0, 0, 0, 0, 0)
		if e == unix.ENOSYS {
			return "", fmt.Errorf("system call %d: %w", nr, e)
		}
		return fmt.Sprintf("system call %d reached the kernel (%v)", nr, e), nil
	},
	"mountapi": func([]string) (string, error) {
		// open_tree_attr (Linux 6.15, 467 on every architecture) is
		// open_tree with mount_setattr in one call; without
		// OPEN_TREE_CLONE it opens a path as open_tree does, so the
		// kernel answers it with a descriptor unless the filter denies
		// it.
		dirfd := unix.AT_FDCWD
		path := []byte("/\x00")
		fd, _, e := unix.Syscall6(467, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])), uintptr(unix.OPEN_TREE_CLOEXEC), 0, 0, 0)
		if e != 0 {
			return "", fmt.Errorf("open_tree_attr: %w", e)
		}
		unix.Close(int(fd))
		return "open_tree_attr opened /", nil
	},
	"tty": func([]string) (string, error) {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		f.Close()
		return "opened the controlling terminal", nil
	},
	"status": func([]string) (string, error) {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return "", err
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "Groups:"} {
				if strings.HasPrefix(l, k) {
					keep = append(keep, strings.Join(strings.Fields(l), " "))
				}
			}
		}
		m, _ := os.ReadFile("/proc/self/uid_map")
		return strings.Join(keep, ";") + ";uid_map " + strings.Join(strings.Fields(string(m)), " "), nil
	},
}

var errAttack = errors.New("attack failed")

func init() {
	attacks["execread"] = func(a []string) (string, error) {
		out, err := exec.Command(a[0], "read", a[1]).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s: %w", strings.TrimSpace(string(out)), errAttack)
		}
		return strings.TrimSpace(string(out)), nil
	}
}

func init() {
	// agent runs a sandboxed "sleep" attack, as an agent process would run
	// a tool, and waits; the test kills it.
	attacks["agent"] = func(a []string) (string, error) {
		p := Policy{
			Workspace: a[0], ReadOnly: []string{a[1]},
			Env: append(DefaultEnv(), attackEnv+"=1", markEnv+"="+os.Getenv(markEnv)),
		}
		_, err := Run(context.Background(), p, a[2], "sleep")
		return "run returned", err
	}
}

func init() {
	// replace moves the directory a[0] aside and plants a[1:] (relative
	// paths below it, then their contents) in a new one of the same name:
	// how a run would swap a protected path's parent for its own.
	attacks["replace"] = func(a []string) (string, error) {
		dir := a[0]
		if err := os.Rename(dir, dir+"-old"); err != nil {
			return "", err
		}
		for i := 1; i+1 < len(a); i += 2 {
			p := dir + "/" + a[i]
			if err := os.MkdirAll(p[:strings.LastIndexByte(p, '/')], 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(p, []byte(a[i+1]), 0o755); err != nil {
				return "", err
			}
		}
		return "replaced " + dir, nil
	}
}

func init() {
	// setuid copies the executable a[0] to a[1] and makes it setuid (and
	// setgid): a file the host would run as its owner.
	attacks["setuid"] = func(a []string) (string, error) {
		b, err := os.ReadFile(a[0])
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(a[1], b, 0o755); err != nil {
			return "", err
		}
		return "made " + a[1] + " setuid", os.Chmod(a[1], os.ModeSetuid|os.ModeSetgid|0o755)
	}
	// createsuid creates a[0] setuid from the start (open with O_CREAT).
	attacks["createsuid"] = func(a []string) (string, error) {
		fd, err := unix.Open(a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Stat(a[0], &st); err != nil || st.Mode&unix.S_ISUID == 0 {
			return "", fmt.Errorf("created without the setuid bit: %w", errAttack)
		}
		return "created " + a[0] + " setuid", nil
	}
}

func init() {
	// fallocate allocates a[1] files of a[2] bytes each in a new directory
	// below a[0], and removes them again: disk (or memory) taken in a few
	// system calls, each file under the file size limit. Files are left
	// in place when an allocation fails, as a run that fills a disk would.
	attacks["fallocate"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[1])
		size, _ := strconv.ParseInt(a[2], 10, 64)
		dir, err := os.MkdirTemp(a[0], "fallocate-")
		if err != nil {
			return "", err
		}
		for i := range n {
			f, err := os.Create(fmt.Sprintf("%s/f%d", dir, i))
			if err != nil {
				return "", err
			}
			err = unix.Fallocate(int(f.Fd()), 0, 0, size)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("after %d files: %w", i, err)
			}
		}
		os.RemoveAll(dir)
		return fmt.Sprintf("allocated %d × %d bytes", n, size), nil
	}
}

func init() {
	// pidfd opens a pidfd for process a[0] and signals it with signal 0
	// through it: a handle on a process that pid namespaces do not stop
	// once held.
	attacks["pidfd"] = func(a []string) (string, error) {
		pid, _ := strconv.Atoi(a[0])
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		return "signalled process " + a[0] + " through a pidfd", unix.PidfdSendSignal(fd, 0, nil, 0)
	}
	// forgefork walks the attacker's descriptors and, on every socket
	// among them, sends a fork request asking for a helper without any
	// namespace (as the forker's protocol encodes it, with the protocol
	// it read in a[0]) and waits a moment for an answer: a forker that
	// answers (even to refuse) is one the attacker can drive.
	attacks["forgefork"] = func([]string) (string, error) {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return "", err
		}
		req := helper.ForkRequest{}.Encode()
		var seen []string
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd < 3 {
				continue
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil {
				continue // the directory read itself, closed by now
			}
			link, _ := os.Readlink("/proc/self/fd/" + e.Name())
			seen = append(seen, e.Name()+"="+link)
			if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
				continue
			}
			if err := unix.Sendmsg(fd, req, nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT); err != nil {
				continue
			}
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
			b := make([]byte, 512)
			if n, _, _, _, err := unix.Recvmsg(fd, b, nil, 0); err == nil && n > 0 {
				return fmt.Sprintf("descriptor %d answered %q", fd, b[:n]), nil
			}
		}
		return "", fmt.Errorf("no socket among the descriptors %v answered: %w", seen, errAttack)
	}
}

func init() {
	// forkersupervisor is a supervisor for TestForkerDiesWithSupervisor:
	// a backend with the helper program a[0] ("" for none: the default)
	// and a spare runs a command
	// carrying the marker a[1] that sleeps, prints "PIDS <forker>
	// <spare>" once both run, and waits to be killed.
	attacks["forkersupervisor"] = func(a []string) (string, error) {
		n := NewNative(NativeOptions{Helper: a[0], Spares: 1})
		// Every claim starts the next spare at once: without it, a
		// sleeping run that claims a spare already waiting leaves the
		// next one to its end (refill), which never comes, and whether
		// the spare was still starting or already waiting at the claim
		// is a matter of scheduling (the test failed so on a loaded
		// machine).
		n.pool.hooks = &nativeHooks{eager: true}
		p := Policy{Env: append(DefaultEnv(), markEnv+"="+a[1])}
		if r, err := n.Run(context.Background(), p, []string{"true"}, nil); err != nil || !r.OK() {
			return "", fmt.Errorf("first run: %v %+v: %w", err, r, errAttack)
		}
		go n.Run(context.Background(), p, []string{"sleep", "1000"}, nil)
		for range 3000 {
			if fk, spare := n.forkerPid(), n.waitingSpare(); fk != 0 && spare != 0 {
				fmt.Printf("PIDS %d %d\n", fk, spare)
				select {}
			}
			time.Sleep(10 * time.Millisecond)
		}
		return "", fmt.Errorf("no forker and spare: %w", errAttack)
	}
}

func init() {
	// strayfds lists the attacker's descriptors beyond standard input,
	// output and error and reads what it can from each: a descriptor the
	// supervisor held without close-on-exec that came through to the
	// command (a file the command could not open itself, a socket, a
	// pipe someone waits on).
	attacks["strayfds"] = func([]string) (string, error) {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return "", err
		}
		var held []string
		for _, e := range ents {
			fd, err := strconv.Atoi(e.Name())
			if err != nil || fd < 3 {
				continue
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil {
				continue // the directory read itself, closed by now
			}
			link, _ := os.Readlink("/proc/self/fd/" + e.Name())
			b := make([]byte, 64)
			n, _ := unix.Pread(fd, b, 0)
			held = append(held, fmt.Sprintf("%d=%s read %q", fd, link, b[:max(n, 0)]))
		}
		if len(held) > 0 {
			return fmt.Sprintf("holds %v", held), nil
		}
		return "", fmt.Errorf("no descriptor beyond 0, 1 and 2: %w", errAttack)
	}
}

// queueSeq numbers the queues openQueues makes (the attacker's alone).
var queueSeq int

// queueSignal is the real-time signal queueSignals queues.
const queueSignal = 40

// queueSignals blocks queueSignal on this thread (the caller keeps its
// goroutine locked to it) and queues it to the thread, as sigqueue(3)
// would, until the kernel refuses or max are queued: each is charged to
// the user's pending signals (RLIMIT_SIGPENDING). It returns how many were
// queued and why it stopped.
func queueSignals(max int) (int, error) {
	var set unix.Sigset_t
	set.Val[(queueSignal-1)/64] |= 1 << ((queueSignal - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
		return 0, err
	}
	var info [128]byte // siginfo_t: si_signo, si_errno, si_code
	*(*int32)(unsafe.Pointer(&info[0])) = queueSignal
	*(*int32)(unsafe.Pointer(&info[8])) = -1 // SI_QUEUE
	pid, tid := os.Getpid(), unix.Gettid()
	for n := 0; n < max; n++ {
		_, _, e := unix.RawSyscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), queueSignal, uintptr(unsafe.Pointer(&info[0])), 0, 0)
		if e != 0 {
			return n, e
		}
	}
	return max, nil
}

// openQueues makes POSIX message queues of the kernel's default size,
// named for this process, until the kernel refuses or max are made (each
// is charged to the user's RLIMIT_MSGQUEUE bytes) and unlinks none. It
// returns how many were made and why it stopped.
func openQueues(max int) (int, error) {
	for n := 0; n < max; n++ {
		queueSeq++
		name, err := unix.BytePtrFromString(fmt.Sprintf("clawtool-%d-%d", os.Getpid(), queueSeq))
		if err != nil {
			return n, err
		}
		_, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_CREAT|unix.O_EXCL|unix.O_RDWR, 0o600, 0, 0, 0)
		if e != 0 {
			return n, e
		}
	}
	return max, nil
}
