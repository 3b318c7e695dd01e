//go:build linux

package netfwd

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry"
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

func init() {
	if mode, _ := syscall.Getenv(helper.Env); mode != Mode {
		return
	}
	os.Exit(run(os.Args[1:]))
}

func run(argv []string) int {
	sock, listen, user := os.Getenv(SocketEnv), os.Getenv(ListenEnv), os.Getenv(UserEnv)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "clawtool network forwarder: "+format+"\n", args...)
		return 125
	}
	if sock == "" || listen == "" || len(argv) == 0 {
		return fail("no socket, address or command")
	}
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil || uid == 0 {
		// The command never runs as the forwarder's root.
		return fail("user %q is not UID:GID of an unprivileged user", user)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != helper.Env && name != SocketEnv && name != ListenEnv && name != UserEnv {
			env = append(env, kv)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fail("%v", err)
	}
	go serve(ln, sock)

	path, err := lookPath(argv[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%s: %v\n", NotFound, argv[0], err)
		return 127
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
		},
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s%s: %v\n", NotFound, argv[0], err)
		return 127
	}
	cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// lookPath finds name in the PATH of env, as a shell would.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for dir := range strings.SplitSeq(pathVar, ":") {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in PATH %s", pathVar)
}

// serve joins each connection on ln to a new connection to the proxy's
// socket, at most MaxConns at once. A temporary accept error (see
// acceptretry.Temporary) is waited out, 5 ms doubling to 1 s; any other
// ends serve.
func serve(ln net.Listener, sock string) {
	slots := make(chan struct{}, MaxConns)
	var backoff acceptretry.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			if !acceptretry.Temporary(err) {
				return
			}
			// Nothing closes ln while the command runs: the forwarder
			// ends with it.
			backoff.Wait(nil)
			continue
		}
		backoff.Reset()
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			defer c.Close()
			up, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer up.Close()
			// The client's end of input is passed on; the proxy's end of
			// the connection ends both ways.
			go func() {
				io.Copy(up, c)
				up.(*net.UnixConn).CloseWrite()
			}()
			io.Copy(c, up)
		}()
	}
}
