package container

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"github.com/miniopenclaw/tool/sandbox"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/callserver"
	"github.com/moby/moby/client"
)

func TestResolveServer(t *testing.T) {
	self, err := os.Executable()
	must(t, err)
	script := filepath.Join(t.TempDir(), "script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	busybox, _ := exec.LookPath("busybox")
	for _, tc := range []struct {
		name, exe string
		static    bool
		err       string
	}{
		{name: "this test binary", exe: self},
		{name: "a dynamically linked program", exe: "/bin/true"},
		{name: "a static program", exe: busybox, static: true},
		{name: "not an ELF file", exe: script, err: "bad magic"},
		{name: "missing", exe: "/nonexistent/server", err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.exe == "" {
				t.Skip("busybox is not installed (.ci/docker-engine.sh installs busybox-static)")
			}
			img, err := resolveServer(tc.exe)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("resolveServer: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			must(t, err)
			targets := map[string]string{}
			for _, m := range img.mounts {
				if !m.ReadOnly || m.Type != "bind" {
					t.Errorf("mount %+v is not a read-only bind", m)
				}
				if !strings.HasPrefix(m.Target, serverDir+"/") {
					t.Errorf("mount target %s outside %s: it could hide the image's own files", m.Target, serverDir)
				}
				targets[m.Target] = m.Source
			}
			if targets[serverDir+"/server"] == "" {
				t.Fatalf("no server among %v", targets)
			}
			f, err := elf.Open(tc.exe)
			must(t, err)
			defer f.Close()
			libs, _ := f.ImportedLibraries()
			if tc.static {
				if len(img.mounts) != 1 || len(img.cmd) != 1 {
					t.Errorf("static program: mounts %v, command %v; want the binary alone", targets, img.cmd)
				}
				return
			}
			if targets[serverDir+"/ld.so"] == "" || img.cmd[0] != serverDir+"/ld.so" {
				t.Errorf("no loader: mounts %v, command %v", targets, img.cmd)
			}
			for _, l := range libs {
				if targets[serverDir+"/lib/"+l] == "" {
					t.Errorf("library %s not mounted: %v", l, targets)
				}
			}
		})
	}
}

// fakeServer answers the host's first Run frame with frames script returns
// for that call's sequence number, then reads (and discards) until the host
// closes, recording whether a Kill came.
func fakeServer(t *testing.T, script func(seq uint32) []byte) (*callConn, <-chan bool) {
	t.Helper()
	hostEnd, srvEnd := socketPairConns(t)
	killed := make(chan bool, 1)
	go func() {
		r := callserver.NewReader(srvEnd)
		sawKill := false
		defer func() { killed <- sawKill }()
		typ, p, err := r.Next()
		if err != nil || typ != callserver.Run {
			return
		}
		q, err := callserver.DecodeRequest(p)
		if err != nil {
			return
		}
		srvEnd.Write(script(q.Seq))
		for {
			typ, _, err := r.Next()
			if err != nil {
				return
			}
			if typ == callserver.Kill && !sawKill {
				sawKill = true
				e := callserver.Exit{Seq: q.Seq, Status: 9}
				srvEnd.Write(callserver.Append(nil, callserver.Exited, e.Encode()))
			}
		}
	}()
	return &callConn{conn: hostEnd, r: callserver.NewReader(hostEnd)}, killed
}

// TestCallServerHostileFrames runs the host's side of a call against a
// fake server: malformed, out-of-step or oversized frames end the call with
// an error (and retire the container), never a panic; a flood of output is
// cut at the limit and answered with a kill.
func TestCallServerHostileFrames(t *testing.T) {
	frame := callserver.Append
	seq := callserver.Seq
	exit := func(s uint32, status uint32, flags uint32) []byte {
		e := callserver.Exit{Seq: s, Status: status, Flags: flags}
		return frame(nil, callserver.Exited, e.Encode())
	}
	for _, tc := range []struct {
		name    string
		script  func(s uint32) []byte
		limit   int
		err     string
		outcome sandbox.Outcome
		code    int
		stdout  string
		kill    bool
	}{
		{name: "ok", script: func(s uint32) []byte {
			return append(frame(frame(nil, callserver.Started, seq(s), seq(42)), callserver.Stdout, seq(s), []byte("hi\n")), exit(s, 3<<8, 0)...)
		}, outcome: sandbox.Exited, code: 3, stdout: "hi\n"},
		{name: "oom flag", script: func(s uint32) []byte { return exit(s, 9, callserver.ExitOOM) }, outcome: sandbox.MemoryLimit, code: -1},
		{name: "pids flag", script: func(s uint32) []byte { return exit(s, 1<<8, callserver.ExitPIDsMax) }, outcome: sandbox.PIDsLimit, code: 1},
		{name: "not found", script: func(s uint32) []byte {
			return frame(nil, callserver.Failed, callserver.EncodeFailed(s, callserver.FailedNotFound, "x: not found"))
		}, err: "file does not exist"},
		{name: "frame of another call", script: func(s uint32) []byte { return frame(nil, callserver.Stdout, seq(s+1), []byte("x")) }, err: "frame of call"},
		{name: "unknown frame type", script: func(s uint32) []byte { return frame(nil, 'Z', seq(s)) }, err: "unknown frame type"},
		{name: "no sequence number", script: func(s uint32) []byte { return frame(nil, callserver.Stdout, []byte{1}) }, err: "sequence"},
		{name: "oversized frame", script: func(s uint32) []byte {
			return binary.BigEndian.AppendUint32([]byte{callserver.Stdout}, callserver.MaxFrame+1)
		}, err: "payload"},
		{name: "truncated exit", script: func(s uint32) []byte { return frame(nil, callserver.Exited, seq(s), []byte{0}) }, err: "truncated"},
		{name: "oversized failure message", script: func(s uint32) []byte {
			return frame(nil, callserver.Failed, callserver.EncodeFailed(s, 0, ""), make([]byte, callserver.MaxMessage+1))
		}, err: "failure message"},
		{name: "output flood is cut and killed", limit: 100, script: func(s uint32) []byte {
			var b []byte
			for range 50 {
				b = frame(b, callserver.Stdout, seq(s), make([]byte, 1000))
			}
			return b
		}, outcome: sandbox.OutputLimit, code: -1, kill: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, killed := fakeServer(t, tc.script)
			c := &Backend{}
			s := &warmSlot{}
			s.srv.Store(cc)
			r, err, retry := c.runServer(context.Background(), sandbox.Policy{Limits: sandbox.Limits{Output: tc.limit}}, s, "/tmp", nil, []string{"x"}, nil)
			if retry {
				t.Fatalf("retry after %v", err)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("runServer: %v %+v, want an error saying %q", err, r, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tc.outcome || r.ExitCode != tc.code || r.Mode != sandbox.ModeWarmServer {
				t.Errorf("result %s %d %s, want %s %d", r.Outcome, r.ExitCode, r.Mode, tc.outcome, tc.code)
			}
			if tc.stdout != "" && string(r.Stdout) != tc.stdout {
				t.Errorf("stdout %q, want %q", r.Stdout, tc.stdout)
			}
			if tc.limit > 0 && (len(r.Stdout) != tc.limit || !r.Truncated) {
				t.Errorf("kept %d bytes (truncated %v), want %d", len(r.Stdout), r.Truncated, tc.limit)
			}
			cc.conn.Close()
			if got := <-killed; got != tc.kill {
				t.Errorf("server got a kill: %v, want %v", got, tc.kill)
			}
		})
	}
}

// socketPairConns is a connected pair of unix stream sockets.
func socketPairConns(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		must(t, err)
		return c.(*net.UnixConn)
	}
	a, b = conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// serverContainerID returns the id of c's only warm container.
func serverContainerID(t *testing.T, c *Backend) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.warm {
		return s.id
	}
	t.Fatal("no warm container")
	return ""
}

// psIn lists the processes a call in c's warm container sees, but the
// container's init, the call server and ps itself.
func psIn(t *testing.T, c *Backend, p sandbox.Policy) []string {
	t.Helper()
	r, err := c.Run(context.Background(), p, []string{"ps"}, nil)
	if err != nil || !r.OK() {
		t.Fatalf("ps: %v %+v", err, r)
	}
	var rest []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")[1:] {
		if !strings.Contains(line, "docker-init") && !strings.Contains(line, serverDir) && !strings.HasSuffix(line, " ps") {
			rest = append(rest, strings.TrimSpace(line))
		}
	}
	return rest
}

// TestCallServerKillsTheCallsTree: whatever a call starts (background
// children, new sessions, a flood of output) is gone when the call's
// result is back, whether the call exited, timed out or hit the output
// limit; the next call in the same container sees none of it.
func TestCallServerKillsTheCallsTree(t *testing.T) {
	c := requireEngineWith(t, Options{Warm: true})
	for _, tc := range []struct {
		name    string
		p       sandbox.Policy
		argv    string
		timeout time.Duration
		outcome sandbox.Outcome
	}{
		{name: "exited, leaving children", argv: "sleep 1001 & setsid sleep 1002 </dev/null >/dev/null 2>&1 & (setsid sh -c 'sleep 1003' &) ; echo started", outcome: sandbox.Exited},
		{name: "timed out", argv: "sleep 1004 & setsid sleep 1005 & sleep 1006", timeout: 500 * time.Millisecond, outcome: sandbox.TimedOut},
		{name: "output limit from a background child", p: sandbox.Policy{Limits: sandbox.Limits{Output: 8192}}, argv: "yes & yes >&2 & setsid sleep 1007 & wait", outcome: sandbox.OutputLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			r, err := c.Run(ctx, tc.p, []string{"sh", "-c", tc.argv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tc.outcome || r.Mode != sandbox.ModeWarmServer {
				t.Errorf("outcome %s in mode %s (%s), want %s; stderr %q", r.Outcome, r.Mode, r.Fallback, tc.outcome, trim(r.Stderr))
			}
			if tc.outcome == sandbox.OutputLimit && len(r.Stdout)+len(r.Stderr) != 8192 {
				t.Errorf("kept %d+%d bytes, want 8192 together", len(r.Stdout), len(r.Stderr))
			}
			if left := psIn(t, c, tc.p); len(left) > 0 {
				t.Errorf("processes left after the call: %q", left)
			}
		})
	}
}

// TestCallServerFallback: when the call server cannot start, the warm
// container runs calls with the engine's exec, and every result says so
// and why; nothing runs on the host.
func TestCallServerFallback(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	foreign := ""
	if busybox, err := exec.LookPath("busybox"); err == nil {
		// A static binary for another machine: its ELF header says
		// aarch64 (or x86_64 on an aarch64 host).
		b, err := os.ReadFile(busybox)
		must(t, err)
		m := elf.EM_AARCH64
		if elf.Machine(binary.LittleEndian.Uint16(b[18:])) == elf.EM_AARCH64 {
			m = elf.EM_X86_64
		}
		binary.LittleEndian.PutUint16(b[18:], uint16(m))
		foreign = filepath.Join(dir, "foreign")
		must(t, os.WriteFile(foreign, b, 0o755))
	}
	for _, tc := range []struct {
		name, exe, reason string
	}{
		{"not an ELF binary", script, "bad magic"},
		{"exits before connecting", "/bin/true", "exited with status 0 before connecting"},
		{"another architecture", foreign, "this program is built for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.exe == "" {
				t.Skip("busybox is not installed (.ci/docker-engine.sh installs busybox-static)")
			}
			c := requireEngineWith(t, Options{Warm: true})
			c.serverExe = tc.exe
			for i := range 2 {
				r, err := c.Run(context.Background(), sandbox.Policy{}, []string{"sh", "-c", "echo hi; cat /proc/1/cmdline"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if r.Mode != sandbox.ModeWarmExec || !strings.Contains(r.Fallback, tc.reason) || !strings.Contains(r.Fallback, "could not start") {
					t.Errorf("call %d: mode %s, fallback %q; want %s and a reason saying %q", i, r.Mode, r.Fallback, sandbox.ModeWarmExec, tc.reason)
				}
				if !r.OK() || !strings.HasPrefix(string(r.Stdout), "hi\n") || !strings.Contains(string(r.Stdout), "sleep") {
					t.Errorf("call %d: %s %q %q, want hi from the exec keeper's container", i, r.Summary(), r.Stdout, r.Stderr)
				}
			}
		})
	}
}

// TestCallServerRestarts: a warm container that died between calls is
// replaced by a new one running the call server.
func TestCallServerRestarts(t *testing.T) {
	c := requireEngineWith(t, Options{Warm: true})
	run := func() *sandbox.Result {
		r, err := c.Run(context.Background(), sandbox.Policy{}, []string{"echo", "hi"}, nil)
		if err != nil || !r.OK() || string(r.Stdout) != "hi\n" || r.Mode != sandbox.ModeWarmServer {
			t.Fatalf("%v %+v", err, r)
		}
		return r
	}
	run()
	first := serverContainerID(t, c)
	_, err := c.cli.ContainerKill(context.Background(), first, client.ContainerKillOptions{Signal: "KILL"})
	must(t, err)
	run()
	if serverContainerID(t, c) == first {
		t.Error("the dead container was not replaced")
	}
}

// TestCallServerStdinFlowControl: input larger than the pipe reaches a
// command that reads it slowly, whole; and input a command never reads
// does not hold up the call's end.
func TestCallServerStdinFlowControl(t *testing.T) {
	c := requireEngineWith(t, Options{Warm: true})
	in := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	r, err := c.Run(context.Background(), sandbox.Policy{}, []string{"sh", "-c", "sleep 0.2; wc -c"}, strings.NewReader(in))
	if err != nil || !r.OK() || strings.TrimSpace(string(r.Stdout)) != "1048576" {
		t.Errorf("slow reader: %v %+v", err, r)
	}
	r, err = c.Run(context.Background(), sandbox.Policy{}, []string{"true"}, io.MultiReader(strings.NewReader(in), strings.NewReader(in)))
	if err != nil || !r.OK() {
		t.Errorf("no reader: %v %+v", err, r)
	}
	if errors.Is(err, errServerGone) {
		t.Error("the server went away")
	}
}

// TestCallServerFilesHidden: a call can neither read nor run the server's
// binary, and cannot reach the directory the socket was in.
func TestCallServerFilesHidden(t *testing.T) {
	c := requireEngineWith(t, Options{Warm: true})
	for _, argv := range [][]string{
		{"cat", serverDir + "/server"},
		{"ls", serverDir},
		{"ls", serverDir + "/run"},
		{serverDir + "/server"},
	} {
		r, err := c.Run(context.Background(), sandbox.Policy{}, argv, nil)
		if err == nil && r.OK() {
			t.Errorf("%v: %s %q, want a refusal", argv, r.Summary(), trim(r.Stdout))
			continue
		}
		if err == nil && !strings.Contains(strings.ToLower(string(r.Stderr)), "permission denied") {
			t.Errorf("%v: %s, stderr %q, want permission denied", argv, r.Summary(), r.Stderr)
		}
		if err != nil && !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%v: %v, want permission denied", argv, err)
		}
	}
}

// TestCallServerRefusesOversizedCalls: a command line and environment
// over the frame bound is refused before anything is sent.
func TestCallServerRefusesOversizedCalls(t *testing.T) {
	hostEnd, srvEnd := socketPairConns(t)
	s := &warmSlot{}
	s.srv.Store(&callConn{conn: hostEnd, r: callserver.NewReader(hostEnd)})
	big := strings.Repeat("x", callserver.MaxFrame)
	_, err, retry := (&Backend{}).runServer(context.Background(), sandbox.Policy{}, s, "/tmp", []string{"A=" + big}, []string{"true"}, nil)
	if err == nil || retry || !strings.Contains(err.Error(), "too large") {
		t.Errorf("runServer: %v (retry %v), want a refusal", err, retry)
	}
	hostEnd.Close()
	if b, _ := io.ReadAll(srvEnd); len(b) > 0 {
		t.Errorf("the server got %d bytes", len(b))
	}
}

// TestCallServerImageWithoutShell: the call server needs nothing of the
// image, where the exec fallback needs its sh. The image here holds one
// static busybox and an echo link to it, nothing else.
func TestCallServerImageWithoutShell(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox is not installed (.ci/docker-engine.sh installs busybox-static)")
	}
	const img = "clawtool-test/nosh:1"
	cli, err := client.New(client.FromEnv)
	must(t, err)
	// Registered before the backends, so it runs after they are closed.
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), img, client.ImageRemoveOptions{Force: true})
		cli.Close()
	})
	server := requireEngineWith(t, Options{Warm: true})
	execOnly := requireEngineWith(t, Options{Warm: true, WarmExec: true})

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	bin, err := os.ReadFile(busybox)
	must(t, err)
	must(t, tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}))
	must(t, tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))}))
	_, err = tw.Write(bin)
	must(t, err)
	must(t, tw.WriteHeader(&tar.Header{Name: "bin/echo", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}))
	must(t, tw.Close())
	res, err := cli.ImageImport(context.Background(), client.ImageImportSource{Source: &buf, SourceName: "-"}, img, client.ImageImportOptions{Changes: []string{"ENV PATH=/bin"}})
	must(t, err)
	io.Copy(io.Discard, res)
	res.Close()

	p := sandbox.Policy{Image: img}
	r, err := server.Run(context.Background(), p, []string{"echo", "no shell here"}, nil)
	if err != nil || !r.OK() || string(r.Stdout) != "no shell here\n" || r.Mode != sandbox.ModeWarmServer {
		t.Errorf("call server: %v %+v", err, r)
	}
	if r, err := execOnly.Run(context.Background(), p, []string{"echo", "no shell here"}, nil); err == nil && r.OK() {
		t.Errorf("exec without sh: %s %q, want a failure (the test would prove nothing)", r.Summary(), r.Stdout)
	}
}

// TestCallServerDiesMidCall: a call whose container dies under it ends
// with an error saying so (not a hang, not a result pretending the
// command ran), and the next call gets a new container.
func TestCallServerDiesMidCall(t *testing.T) {
	c := requireEngineWith(t, Options{Warm: true})
	ws := t.TempDir()
	must(t, os.Chown(ws, sandbox.DefaultUID, sandbox.DefaultUID))
	p := sandbox.Policy{Workspace: ws}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), p, []string{"sh", "-c", "touch started; sleep 60"}, nil)
		errc <- err
	}()
	// Wait, bounded by steps, for the command to run.
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The engine's list, not the slot, names the container: the slot is
	// the running call's.
	list, err := c.cli.ContainerList(context.Background(), client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", LabelBackend+"="+c.id),
	})
	must(t, err)
	if len(list.Items) != 1 {
		t.Fatalf("%d running containers, want the warm one", len(list.Items))
	}
	_, err = c.cli.ContainerKill(context.Background(), list.Items[0].ID, client.ContainerKillOptions{Signal: "KILL"})
	must(t, err)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "died during the call") {
			t.Errorf("call: %v, want an error saying the server died", err)
		}
	case <-time.After(30 * time.Second): // ok-wallclock
		t.Fatal("the call did not end when its container died")
	}
	r, err := c.Run(context.Background(), p, []string{"echo", "again"}, nil)
	if err != nil || !r.OK() || r.Mode != sandbox.ModeWarmServer {
		t.Errorf("next call: %v %+v", err, r)
	}
}
