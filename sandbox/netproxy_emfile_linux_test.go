package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// emfileEnv makes the test binary emfileMain, the child of
// TestProxyRealEMFILE.
const emfileEnv = "SBX_PROXY_EMFILE"

// emfileListener passes Accept on and, the first time it fails with
// EMFILE, reports it and calls release.
type emfileListener struct {
	net.Listener
	once    sync.Once
	release func()
}

func (l *emfileListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if errors.Is(err, syscall.EMFILE) {
		l.once.Do(l.release)
	}
	return c, err
}

// emfileMain serves a Proxy on loopback in a process whose every
// descriptor is taken: it lowers its own RLIMIT_NOFILE to 64, opens
// /dev/null until that fails with EMFILE, prints the listener's address
// and waits for the line "go" on its standard input before it serves.
// Accept then fails with a real EMFILE (Linux takes the descriptor
// before it dequeues a connection); the listener prints "emfile" and
// frees the descriptors. It prints how Serve ended, if it does before its
// standard input ends; then it closes the proxy.
func emfileMain() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	rl := syscall.Rlimit{Cur: 64, Max: 64}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max < rl.Max {
		rl.Max = cur.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	var hoard []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				fmt.Println("hoard:", err)
				return 1
			}
			break
		}
		hoard = append(hoard, f)
	}
	var mu sync.Mutex
	el := &emfileListener{Listener: l, release: func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range hoard {
			f.Close()
		}
		hoard = nil
		fmt.Println("emfile")
	}}
	fmt.Println(l.Addr())
	// The parent's client connects and sends its request, then says go:
	// the client waits in the listen queue while Accept fails.
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); line != "go\n" {
		fmt.Println("no go:", line, err)
		return 1
	}
	p := &Proxy{Rules: []HostRule{{Host: "listed.test"}}}
	ended := make(chan error, 1)
	go func() { ended <- p.Serve(el) }()
	stdin := make(chan struct{})
	go func() { io.Copy(io.Discard, in); close(stdin) }()
	select {
	case err := <-ended:
		l.Close()
		fmt.Println("serve ended:", err)
	case <-stdin:
		p.Close()
		<-ended
	}
	return 0
}

// TestProxyRealEMFILE: a child process (never this one) runs out of
// descriptors with a real RLIMIT_NOFILE, so its proxy's Accept fails with
// EMFILE from the kernel while this test's client waits in the listen
// queue. The child frees them at that failure; the proxy then serves the
// waiting connection (a request in origin form is answered
// 400, with no resolving nor dialing). The control is the child's "emfile"
// line: Accept did fail with EMFILE, so the answer shows Serve outlived
// it. Before, Serve ended there ("serve ended: ... too many open files"),
// the listener closed and the connection was reset.
func TestProxyRealEMFILE(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), emfileEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		stdin.Close()
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v; stderr %q", err, stderr.String())
		}
	}()
	next := func() string {
		select {
		case s, ok := <-lines:
			if !ok {
				t.Fatalf("the child ended early; stderr %q", stderr.String())
			}
			return s
		case <-time.After(30 * time.Second): // ok-wallclock: a bound, not a figure
			t.Fatal("the child said nothing for 30s")
		}
		return ""
	}
	addr := next()
	if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
		t.Fatalf("the child's first line %q is not its address", addr)
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	io.WriteString(stdin, "go\n")
	if s := next(); s != "emfile" {
		t.Fatalf("control: the child's Accept did not fail with EMFILE: %q", s)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		stdin.Close()
		var rest []string
		for s := range lines {
			rest = append(rest, s)
		}
		t.Fatalf("no answer after the EMFILE: %v; the child said %q", err, rest)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("answer after the EMFILE = %d, want 400", resp.StatusCode)
	}
}
