package container

import (
	"bufio"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry"
	"github.com/miniopenclaw/tool/sandbox/internal/callserver"
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"github.com/moby/moby/api/pkg/stdcopy"
	mcontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// The call server of a warm container (see package callserver) is this
// program's own binary, bind-mounted read-only under serverDir with the
// dynamic loader and the shared libraries it needs, so that it runs in any
// image, one without a libc or a shell included. serverDir is a tmpfs
// only root may enter: the calls, run as the sandbox user, can neither
// read nor run what is in it. The host listens on a
// unix socket in a private directory bound read-only at serverDir/run;
// the server connects to it once, and the host then closes the listener
// and removes the directory: no socket is left for a call to reach.
//
// A socket rather than the container's attached stdin and stdout: the
// frames go from this process to the server through the kernel alone,
// where an attached stream passes through the engine and its shim, two
// more copies each way per frame; and the call path does not depend on
// the engine's stream handling at all.
const serverDir = "/.clawtool"

// Bounds of the call server's start and of a call whose server stops
// answering. They only matter when something is broken.
const (
	serverStartTimeout = 30 * time.Second // ok-wallclock
	serverHelloTimeout = 10 * time.Second // ok-wallclock
	serverKillGrace    = 10 * time.Second // ok-wallclock
	serverWriteTimeout = 30 * time.Second // ok-wallclock
	maxServerLibraries = 256
)

// serverCapabilities are what the server keeps of root's capabilities:
// setting a call's user and group, and killing a call's processes, which
// run as that user. A call gets none of them (see [Options]).
var serverCapabilities = []string{"CAP_KILL", "CAP_SETGID", "CAP_SETUID"}

// A serverImage is what a container needs to run the server: bind mounts
// and the command line.
type serverImage struct {
	mounts  []mount.Mount
	cmd     []string
	machine elf.Machine
}

// serverFiles resolves the call server's files once per backend.
func (c *Backend) serverFiles() (*serverImage, error) {
	c.serverOnce.Do(func() {
		exe := c.serverExe
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				c.serverErr = err
				return
			}
		}
		c.server, c.serverErr = resolveServer(exe)
		if c.serverErr == nil && c.engineArch != "" {
			if want := engineMachine(c.engineArch); want != elf.EM_NONE && want != c.server.machine {
				c.server, c.serverErr = nil, fmt.Errorf("the engine runs %s containers and this program is built for %s", c.engineArch, c.server.machine)
			}
		}
	})
	return c.server, c.serverErr
}

func engineMachine(arch string) elf.Machine {
	switch arch {
	case "x86_64", "amd64":
		return elf.EM_X86_64
	case "aarch64", "arm64":
		return elf.EM_AARCH64
	case "i386", "i686":
		return elf.EM_386
	case "armv7l", "armhf", "arm":
		return elf.EM_ARM
	case "ppc64le":
		return elf.EM_PPC64
	case "s390x":
		return elf.EM_S390
	case "riscv64":
		return elf.EM_RISCV
	}
	return elf.EM_NONE
}

// resolveServer finds what running exe in a container takes: exe itself
// and, when it is dynamically linked, its loader (PT_INTERP) and every
// shared library it needs (DT_NEEDED, transitively), resolved on this
// host the way the loader would and checked to be of exe's class and
// machine.
func resolveServer(exe string) (*serverImage, error) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, err
	}
	f, err := elf.Open(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", exe, err)
	}
	defer f.Close()
	img := &serverImage{machine: f.Machine}
	bind := func(src, dst string) {
		img.mounts = append(img.mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: true})
	}
	bind(real, serverDir+"/server")
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
			if err != nil {
				return nil, fmt.Errorf("%s: loader: %w", exe, err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		img.cmd = []string{serverDir + "/server"}
		return img, nil
	}
	ld, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("%s: loader: %w", exe, err)
	}
	bind(ld, serverDir+"/ld.so")
	dirs := librarySearchPath(filepath.Dir(interp))
	seen := map[string]bool{}
	type need struct{ name, from string }
	queue := []need{}
	add := func(obj *elf.File, from string) error {
		libs, err := obj.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		for _, l := range libs {
			queue = append(queue, need{l, from})
		}
		return nil
	}
	if err := add(f, real); err != nil {
		return nil, err
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		base := filepath.Base(n.name)
		if seen[base] {
			continue
		}
		seen[base] = true
		if len(seen) > maxServerLibraries {
			return nil, fmt.Errorf("%s needs more than %d libraries", exe, maxServerLibraries)
		}
		path, lib, err := findLibrary(n.name, n.from, dirs, f.Class, f.Machine)
		if err != nil {
			return nil, err
		}
		err = add(lib, path)
		lib.Close()
		if err != nil {
			return nil, err
		}
		bind(path, serverDir+"/lib/"+base)
	}
	img.cmd = []string{serverDir + "/ld.so", "--library-path", serverDir + "/lib", serverDir + "/server"}
	return img, nil
}

// findLibrary resolves a DT_NEEDED name needed by the object at from: a
// name with a slash as it is, else the first file of that name in the
// object's DT_RUNPATH or DT_RPATH (with $ORIGIN) or in dirs that is an ELF
// object of class and machine. It returns the resolved path and the open
// object.
func findLibrary(name, from string, dirs []string, class elf.Class, machine elf.Machine) (string, *elf.File, error) {
	var cands []string
	if strings.Contains(name, "/") {
		cands = []string{name}
	} else {
		var own []string
		if obj, err := elf.Open(from); err == nil {
			for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
				vals, _ := obj.DynString(tag)
				for _, v := range vals {
					for d := range strings.SplitSeq(v, ":") {
						d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(from))
						if filepath.IsAbs(d) {
							own = append(own, d)
						}
					}
				}
			}
			obj.Close()
		}
		for _, d := range append(own, dirs...) {
			cands = append(cands, filepath.Join(d, name))
		}
	}
	for _, p := range cands {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		lib, err := elf.Open(real)
		if err != nil {
			continue
		}
		if lib.Class == class && lib.Machine == machine {
			return real, lib, nil
		}
		lib.Close()
	}
	return "", nil, fmt.Errorf("library %s (needed by %s) not found on this host", name, from)
}

// librarySearchPath lists the directories the loader searches, in its
// order: those of /etc/ld.so.conf (with its includes), the multiarch
// directories, the loader's own directory and the defaults. Missing ones
// are harmless.
func librarySearchPath(loaderDir string) []string {
	var dirs []string
	files, budget := []string{"/etc/ld.so.conf"}, 64
	for len(files) > 0 && budget > 0 {
		name := files[0]
		files = files[1:]
		budget--
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			line = strings.TrimSpace(line)
			if pat, ok := strings.CutPrefix(line, "include "); ok {
				pat = strings.TrimSpace(pat)
				if !filepath.IsAbs(pat) {
					pat = filepath.Join("/etc", pat)
				}
				m, _ := filepath.Glob(pat)
				slices.Sort(m)
				files = append(files, m...)
			} else if filepath.IsAbs(line) {
				dirs = append(dirs, line)
			}
		}
		f.Close()
	}
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "386": "i386-linux-gnu", "arm": "arm-linux-gnueabihf", "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu"}[runtime.GOARCH]
	if triplet != "" {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	return append(dirs, loaderDir, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// A callConn is the host's end of a call server's connection.
type callConn struct {
	conn *net.UnixConn
	r    *callserver.Reader
	seq  uint32 // of the last call, touched only under the slot's lock

	wmu  sync.Mutex
	wbuf []byte
}

func (cc *callConn) send(t byte, parts ...[]byte) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	cc.wbuf = callserver.Append(cc.wbuf[:0], t, parts...)
	cc.conn.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
	_, err := cc.conn.Write(cc.wbuf)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startServer starts a warm container for opts whose main process is the
// call server, and returns it once the server has connected and proved
// it is the one started. Any failure removes the container and says why.
func (c *Backend) startServer(ctx context.Context, opts client.ContainerCreateOptions) (string, *callConn, error) {
	img, err := c.serverFiles()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "clawtool-callserver-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	// The server runs as the container's root without CAP_DAC_OVERRIDE:
	// it can traverse the directory but not list it, and the socket's
	// name is a secret; the token proves the connection is the server's.
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", nil, err
	}
	name := randomHex(16) + ".sock"
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
	if err != nil {
		return "", nil, err
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Join(dir, name), 0o777); err != nil {
		return "", nil, err
	}
	token := randomHex(16)

	cfg, hc := *opts.Config, *opts.HostConfig
	opts.Config, opts.HostConfig = &cfg, &hc
	cfg.Entrypoint, cfg.Cmd = img.cmd, nil
	cfg.User = "0:0"
	cfg.Env = []string{helper.Env + "=" + callserver.Mode, callserver.SocketEnv + "=" + serverDir + "/run/" + name, callserver.TokenEnv + "=" + token}
	cfg.AttachStdout, cfg.AttachStderr = false, true
	hc.Mounts = append(slices.Clone(hc.Mounts), img.mounts...)
	hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: dir, Target: serverDir + "/run", ReadOnly: true})
	hc.CapAdd = serverCapabilities
	// The server's files sit in a directory of root's that calls cannot
	// enter: a call cannot read or run this program, and never sees the
	// socket's directory.
	hc.Tmpfs = maps.Clone(hc.Tmpfs)
	hc.Tmpfs[serverDir] = fmt.Sprintf("mode=0700,size=64k,nr_inodes=%d,noexec,nosuid,nodev", maxServerLibraries+16)

	created, err := c.cli.ContainerCreate(ctx, opts)
	if err != nil {
		return "", nil, fmt.Errorf("create: %w", err)
	}
	id := created.ID
	if err := c.track(id); err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, *callConn, error) {
		c.remove(id)
		return "", nil, err
	}
	att, err := c.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stderr: true})
	if err != nil {
		return fail(fmt.Errorf("attach: %w", err))
	}
	stderr := outcome.NewBudget(2048).Stream()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		stdcopy.StdCopy(io.Discard, stderr, att.Reader)
	}()
	defer func() {
		att.Close()
		<-copied
	}()
	if _, err := c.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	wait := c.cli.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: mcontainer.WaitConditionNotRunning})
	type accepted struct {
		conn *net.UnixConn
		err  error
	}
	acc := make(chan accepted, 1)
	stop := make(chan struct{})
	stopAccept := sync.OnceFunc(func() { close(stop); ln.Close() })
	go func() {
		conn, err := acceptOne(ln, stop)
		acc <- accepted{conn, err}
	}()
	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	var conn *net.UnixConn
	select {
	case a := <-acc:
		if a.err != nil {
			return fail(a.err)
		}
		conn = a.conn
	case res := <-wait.Result:
		stopAccept()
		<-acc
		// Give the stream the server's last words.
		select {
		case <-copied:
		case <-time.After(time.Second): // ok-wallclock
		}
		return fail(fmt.Errorf("the server exited with status %d before connecting: %s", res.StatusCode, strings.TrimSpace(string(stderr.Bytes()))))
	case err := <-wait.Error:
		stopAccept()
		<-acc
		return fail(fmt.Errorf("wait: %w", err))
	case <-ctx.Done():
		stopAccept()
		<-acc
		return fail(ctx.Err())
	case <-timer.C:
		stopAccept()
		<-acc
		return fail(fmt.Errorf("the server did not connect within %s: %s", serverStartTimeout, strings.TrimSpace(string(stderr.Bytes()))))
	}
	ln.Close()
	cc := &callConn{conn: conn, r: callserver.NewReader(conn)}
	conn.SetReadDeadline(time.Now().Add(serverHelloTimeout))
	t, p, err := cc.r.Next()
	if err == nil && t != callserver.Hello {
		err = fmt.Errorf("first frame %q, want a hello", t)
	}
	if err == nil {
		var v uint32
		var tok string
		if v, tok, err = callserver.DecodeHello(p); err == nil && (v != callserver.Version || tok != token) {
			err = fmt.Errorf("hello of protocol %d with the wrong token, want protocol %d", v, callserver.Version)
		}
	}
	if err != nil {
		conn.Close()
		return fail(fmt.Errorf("hello: %w", err))
	}
	conn.SetReadDeadline(time.Time{})
	return id, cc, nil
}

// errServerGone marks a call the server never started because its
// connection was already gone: the call may be retried in a new one.
var errServerGone = errors.New("sandbox: the warm container's call server is gone")

// runServer runs one call through the slot's call server. retry reports
// that nothing ran because the server was gone before the call started.
func (c *Backend) runServer(ctx context.Context, p sandbox.Policy, s *warmSlot, workdir string, env, argv []string, stdin io.Reader) (r *sandbox.Result, err error, retry bool) {
	cc := s.conn()
	l := p.Limits.WithDefaults()
	uid := containerUID(p)
	cc.seq++
	seq := cc.seq
	req := callserver.Request{Seq: seq, UID: uint32(uid), GID: uint32(uid), Stdin: stdin != nil, Dir: workdir, Argv: argv, Env: env}
	payload := req.Encode()
	if len(payload) > callserver.MaxFrame {
		return nil, errors.New("sandbox: the command and environment are too large"), false
	}
	seqb := callserver.Seq(seq)
	start := time.Now()
	if err := cc.send(callserver.Run, payload); err != nil {
		return nil, fmt.Errorf("%w: %v", errServerGone, err), true
	}
	// The watchdog is stopped after k.finish has waited for the kill
	// that may have set it (deferred calls run last first).
	var watchdog atomic.Pointer[time.Timer]
	defer func() {
		if t := watchdog.Load(); t != nil {
			t.Stop()
		}
	}()
	k := newCall(l.Output)
	defer k.finish()
	kill := k.killer(func() {
		cc.send(callserver.Kill, seqb)
		// A server that does not answer the kill loses its connection,
		// which ends the call below.
		watchdog.Store(time.AfterFunc(l.WaitDelay+serverKillGrace, func() { cc.conn.Close() }))
	})
	stop := context.AfterFunc(ctx, func() { kill(sandbox.TimedOut) })
	defer stop()

	done := make(chan struct{})
	defer close(done)
	acks := make(chan struct{}, 1)

	// broken ends the call on a protocol error: the server is not to be
	// trusted with another call.
	broken := func(err error) (*sandbox.Result, error, bool) {
		c.retire(s)
		return nil, fmt.Errorf("sandbox: call server: %w", err), false
	}
	started := false
	for {
		t, pl, err := cc.r.Next()
		if errors.Is(err, callserver.ErrFrame) {
			return broken(err)
		}
		if err != nil {
			if !started && k.killedFor.Load() == nil && ctx.Err() == nil {
				return nil, fmt.Errorf("%w: %v", errServerGone, err), true
			}
			return c.serverLost(s, k, p, start, err)
		}
		fseq, rest, err := callserver.SplitSeq(pl)
		if err == nil && fseq != seq {
			err = fmt.Errorf("%w: frame of call %d during call %d", callserver.ErrFrame, fseq, seq)
		}
		if err != nil {
			return broken(err)
		}
		switch t {
		case callserver.Started:
			if started {
				break
			}
			started = true
			// Input is read only once the command runs: a call retried
			// because its server was gone has consumed none of it.
			if stdin != nil {
				go pumpStdin(cc, seqb, stdin, acks, done)
			}
		case callserver.Stdout:
			k.stdout.Write(rest)
		case callserver.Stderr:
			k.stderr.Write(rest)
		case callserver.StdinAck:
			select {
			case acks <- struct{}{}:
			default:
			}
		case callserver.Failed:
			_, reason, msg, err := callserver.DecodeFailed(pl)
			if err != nil {
				return broken(err)
			}
			if reason == callserver.FailedNotFound {
				return nil, fmt.Errorf("sandbox: command %q: %w (%s)", argv[0], os.ErrNotExist, msg), false
			}
			return nil, fmt.Errorf("sandbox: command %q: %s", argv[0], msg), false
		case callserver.Exited:
			e, err := callserver.DecodeExit(pl)
			if err != nil {
				return broken(err)
			}
			if e.Flags&(callserver.ExitLeftover|callserver.ExitRetire) != 0 {
				c.retire(s)
			}
			r := &sandbox.Result{
				Stdout:    k.stdout.Bytes(),
				Stderr:    k.stderr.Bytes(),
				Truncated: k.budget.Exceeded(),
				Duration:  time.Since(start),
				CPU:       time.Duration(e.CPU),
				Layers:    layersFor(p),
				ExitCode:  e.ExitCode(),
				Mode:      sandbox.ModeWarmServer,
			}
			sig := e.Signaled()
			if sig != 0 {
				r.Signal = syscall.Signal(sig).String()
			}
			why, _ := k.killedFor.Load().(sandbox.Outcome)
			r.Outcome = outcome.Classify(why, r.ExitCode, sig, r.CPU, l.CPU, e.Flags&callserver.ExitOOM != 0, e.Flags&callserver.ExitPIDsMax != 0, r.Stderr)
			return r, nil, false
		default:
			return broken(fmt.Errorf("%w: unknown frame type %q", callserver.ErrFrame, t))
		}
	}
}

// pumpStdin sends the call's input in chunks, one unacknowledged at a
// time, then its end.
func pumpStdin(cc *callConn, seq []byte, stdin io.Reader, acks <-chan struct{}, done <-chan struct{}) {
	buf := make([]byte, callserver.Chunk)
	for {
		n, err := stdin.Read(buf)
		select {
		case <-done:
			return
		default:
		}
		if n > 0 {
			if cc.send(callserver.Stdin, seq, buf[:n]) != nil {
				return
			}
			select {
			case <-acks:
			case <-done:
				return
			}
		}
		if err != nil {
			cc.send(callserver.StdinEOF, seq)
			return
		}
	}
}

// serverLost ends a call whose server connection broke after the call
// started: the container is removed, after reading its OOM flag (the
// kernel may have killed the server at the memory limit).
func (c *Backend) serverLost(s *warmSlot, k *call, p sandbox.Policy, start time.Time, cause error) (*sandbox.Result, error, bool) {
	id := s.id
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // ok-wallclock
	defer cancel()
	ins, err := c.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	c.retire(s)
	if err == nil && ins.Container.State != nil && ins.Container.State.OOMKilled {
		r := k.result(p, start, 128+outcome.SigKILL, true)
		r.Mode = sandbox.ModeWarmServer
		return r, nil, false
	}
	if why, _ := k.killedFor.Load().(sandbox.Outcome); why != "" {
		return nil, fmt.Errorf("sandbox: the call server did not answer after the call was killed (%s); its container was removed: %v", why, cause), false
	}
	return nil, fmt.Errorf("sandbox: the call server died during the call; its container was removed: %v", cause), false
}

// acceptOne accepts the call server's one connection on ln. A temporary
// accept error (see acceptretry.Temporary: descriptors, buffers or memory
// short, a client gone) is waited out, 5 ms doubling to 1 s, rather than
// failing a start whose server is up; closing stop ends such a wait at
// once with [net.ErrClosed]. Any other error is returned at once.
func acceptOne(ln interface {
	AcceptUnix() (*net.UnixConn, error)
}, stop <-chan struct{}) (*net.UnixConn, error) {
	var backoff acceptretry.Backoff
	for {
		conn, err := ln.AcceptUnix()
		if err == nil || !acceptretry.Temporary(err) {
			return conn, err
		}
		if !backoff.Wait(stop) {
			return nil, net.ErrClosed
		}
	}
}
