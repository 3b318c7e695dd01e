package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	// stdinwrite reads what standard input holds (up to 64 bytes), then
	// writes a[0] to it, as a command handed the caller's terminal, or a
	// file or socket open for writing, as its input could, pushes a byte
	// into a terminal's input queue (TIOCSTI) and turns its echo off
	// (TCSETS). It reports what it read and what worked.
	attacks["stdinwrite"] = func(a []string) (string, error) {
		b := make([]byte, 64)
		n, _ := unix.Read(0, b)
		did := []string{fmt.Sprintf("read %q", b[:max(n, 0)])}
		if _, err := unix.Write(0, []byte(a[0])); err == nil {
			did = append(did, "wrote to standard input")
		} else {
			did = append(did, "write: "+err.Error())
		}
		c := byte('x')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e == 0 {
			did = append(did, "TIOCSTI pushed input")
		}
		if t, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
			t.Lflag &^= unix.ECHO
			if unix.IoctlSetTermios(0, unix.TCSETS, t) == nil {
				did = append(did, "turned echo off")
			}
		}
		return strings.Join(did, "; "), nil
	}
}

// openPTY opens a pseudo-terminal pair: its master and its terminal,
// open for reading and writing as an interactive shell's standard input
// is.
func openPTY(t *testing.T) (master, term *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	must(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	must(t, err)
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

// A command's standard input given as an *os.File was handed to it as it
// was, its open file description shared: given the caller's terminal the
// command wrote escape sequences straight to it (past Result.Text's
// escaping: a title, a clipboard write, whatever the terminal obeys) and
// turned its echo off for the user's next password; given a file or a
// socket open for writing, it wrote to them. Each case runs the attack
// twice: the control with the check off (nativeHooks.anyStdinFile), whose
// effect the host-side check sees (the terminal's master reads the escape
// and echo is off; the file outside the workspace holds the mark; the
// socket's peer reads it), and with the check, where the run is refused
// before anything starts, or runs reading the same input through a pipe
// and the host sees nothing.
func TestStdinFileHandOver(t *testing.T) {
	f := newFixture(t)
	const mark = "\x1b]0;PWNED\x07"
	type stdinCase struct {
		name string
		// open returns the standard input to give and the host-side
		// check of the attack's effect.
		open func(t *testing.T) (*os.File, func() bool)
		// refused is the refusal the run must get with the check;
		// otherwise it runs and reads input.
		refused, input string
	}
	cases := []stdinCase{
		{name: "terminal", refused: "is a terminal", open: func(t *testing.T) (*os.File, func() bool) {
			m, s := openPTY(t)
			m.Write([]byte("input\n")) // the user's line, for the command's read
			return s, func() bool {
				echo := true
				if tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS); err == nil {
					echo = tio.Lflag&unix.ECHO != 0
				}
				return !echo || strings.Contains(drain(int(m.Fd())), "PWNED")
			}
		}},
		{name: "file open for writing outside the workspace", input: "input", open: func(t *testing.T) (*os.File, func() bool) {
			p := filepath.Join(f.outside, unique("stdin"))
			must(t, os.WriteFile(p, []byte("input"), 0o600))
			file, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			t.Cleanup(func() { file.Close() })
			return file, fileHas(p, "PWNED")
		}},
		{name: "socket", refused: "is a socket", open: func(t *testing.T) (*os.File, func() bool) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			must(t, err)
			mine, theirs := os.NewFile(uintptr(fds[0]), "peer"), os.NewFile(uintptr(fds[1]), "socket")
			t.Cleanup(func() { mine.Close(); theirs.Close() })
			c, err := net.FileConn(mine)
			must(t, err)
			t.Cleanup(func() { c.Close() })
			c.Write([]byte("input"))
			return theirs, func() bool {
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				b := make([]byte, 256)
				n, _ := c.Read(b)
				return strings.Contains(string(b[:max(n, 0)]), "PWNED")
			}
		}},
	}
	for _, c := range cases {
		for _, check := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/check=%v", c.name, check), func(t *testing.T) {
				stdin, effect := c.open(t)
				n := newTestNative(t, NativeOptions{}, &nativeHooks{anyStdinFile: !check})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				r, err := n.Run(ctx, f.policy(), []string{f.attacker, "stdinwrite", mark}, stdin)
				switch {
				case !check:
					if err != nil || !strings.HasPrefix(string(r.Stdout), "OK") {
						t.Fatalf("control: %v %+v", err, r)
					}
					if !effect() {
						t.Fatalf("control: the attack left no effect on the host: %q", r.Stdout)
					}
					return
				case c.refused != "":
					if err == nil || !strings.Contains(err.Error(), c.refused) {
						t.Fatalf("run: %v %+v; want a refusal saying %q", err, r, c.refused)
					}
				default:
					if err != nil || !strings.Contains(string(r.Stdout), fmt.Sprintf("read %q", c.input)) || strings.Contains(string(r.Stdout), "wrote") {
						t.Fatalf("run: %v %+v; want the input read and no write", err, r)
					}
				}
				if effect() {
					t.Error("host-side check: the attack reached the caller's standard input")
				}
			})
		}
	}
}

// The standard inputs a command is given as they were still are (a pipe's
// read end, a file open read-only), /dev/null open for writing is an
// empty input, and a nil *os.File is none.
func TestStdinFileKinds(t *testing.T) {
	f := newFixture(t)
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	go func() { pw.Write([]byte("piped")); pw.Close() }()
	p := filepath.Join(f.outside, unique("stdin"))
	must(t, os.WriteFile(p, []byte("from a file"), 0o600))
	ro, err := os.Open(p)
	must(t, err)
	defer ro.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	must(t, err)
	defer null.Close()
	for _, c := range []struct {
		name  string
		stdin *os.File
		want  string
	}{
		{"pipe", pr, `read "piped"; write: bad file descriptor`},
		{"file open read-only", ro, `read "from a file"; write: bad file descriptor`},
		{"/dev/null open for writing", null, `read ""`},
		{"nil file", nil, `read ""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := DefaultNative().Run(context.Background(), f.policy(), []string{f.attacker, "stdinwrite", "PWNED"}, c.stdin)
			if err != nil || !strings.HasPrefix(string(r.Stdout), "OK "+c.want) {
				t.Fatalf("%v %+v (stdout %q); want it to start OK %s", err, r, r.Stdout, c.want)
			}
		})
	}
}

// drain returns what the descriptor fd has to read until it has had
// nothing for 200 ms.
func drain(fd int) string {
	var got []byte
	b := make([]byte, 4096)
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 200); n <= 0 || pfd[0].Revents&unix.POLLIN == 0 {
			return string(got)
		}
		n, err := unix.Read(fd, b)
		if n <= 0 || err != nil {
			return string(got)
		}
		got = append(got, b[:n]...)
	}
}
