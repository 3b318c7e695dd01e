package sandbox

import (
	"log/slog"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// networkLog is where n logs its network denials.
func (n *Native) networkLog() *slog.Logger {
	if n.log != nil {
		return n.log
	}
	return slog.Default()
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
