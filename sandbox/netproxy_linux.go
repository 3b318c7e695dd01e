package sandbox

import (
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ProxyPort is the port on the sandbox's own loopback where a
// [NetworkAllow] run finds its proxy. The listening socket is made by the
// helper inside the run's network namespace before the command starts,
// and handed to the supervisor, which accepts on it outside the sandbox:
// nothing of the proxy runs in the sandbox, and the namespace has no other
// interface than that loopback.
const ProxyPort = 3128

// networkLog is where n logs its network denials.
func (n *Native) networkLog() *slog.Logger {
	if n.log != nil {
		return n.log
	}
	return slog.Default()
}

// proxyVars are the variables that name the proxy to the command.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// proxyEnv returns env with the proxy variables set to the run's proxy
// (replacing any the policy set) and NO_PROXY removed.
func proxyEnv(env []string) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	out := make([]string, 0, len(env)+len(proxyVars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.EqualFold(name, "NO_PROXY") || slicesContainsFold(proxyVars, name) {
			continue
		}
		out = append(out, kv)
	}
	for _, v := range proxyVars {
		out = append(out, v+"="+url)
	}
	return out
}

func slicesContainsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// serveProxy receives the listening socket the helper sends on its mount
// socket and serves proxy on it until the returned stop is called. A
// helper that dies before sending ends the receive (its end closes).
func serveProxy(h *helperProc, proxy *Proxy) (stop func()) {
	var (
		mu      sync.Mutex
		l       net.Listener
		stopped bool
	)
	fd := int(h.mountW.Fd())
	go func() {
		buf := make([]byte, 1)
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || n == 0 {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, f := range fds {
				unix.Close(f)
			}
			return
		}
		f := os.NewFile(uintptr(fds[0]), "proxy")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return
		}
		mu.Lock()
		if stopped {
			mu.Unlock()
			ln.Close()
			return
		}
		l = ln
		mu.Unlock()
		proxy.Serve(ln)
		// However the proxy ended, nothing accepts any more: a client
		// is refused at once rather than left in the listen queue.
		ln.Close()
	}()
	return func() {
		mu.Lock()
		stopped = true
		if l != nil {
			l.Close()
		}
		mu.Unlock()
		proxy.Close()
	}
}
