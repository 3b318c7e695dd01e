package container

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"github.com/miniopenclaw/tool/sandbox/internal/netfwd"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// networkLog is where c logs its network denials.
func (c *Backend) networkLog() *slog.Logger {
	if c.opts.NetworkLog != nil {
		return c.opts.NetworkLog
	}
	return slog.Default()
}

// forward makes opts a container whose main process is the network
// forwarder (package netfwd), which starts argv, and serves the allow
// list's proxy on a unix socket bound into it, until stop is called.
// configure, when set, adjusts the proxy (its Rules stay p.Allow).
//
// The socket's directory is private to this process (0711, a random name
// inside) and bound read-only under serverDir, a tmpfs only the
// container's root enters: the command, run as the sandbox user, reaches
// the proxy through the forwarder's loopback port only.
func (c *Backend) forward(p sandbox.Policy, argv []string, opts *client.ContainerCreateOptions, configure func(*sandbox.Proxy)) (proxy *sandbox.Proxy, stop func(), err error) {
	img, err := c.serverFiles()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "clawtool-netfwd-")
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, nil, err
	}
	name := randomHex(16) + ".sock"
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(filepath.Join(dir, name), 0o777); err != nil {
		ln.Close()
		return nil, nil, err
	}

	cfg, hc := *opts.Config, *opts.HostConfig
	opts.Config, opts.HostConfig = &cfg, &hc
	uid := containerUID(p)
	cfg.Entrypoint, cfg.Cmd = img.cmd, slices.Clone(argv)
	cfg.User = "0:0"
	cfg.Env = append(slices.Clone(cfg.Env),
		helper.Env+"="+netfwd.Mode,
		netfwd.SocketEnv+"="+serverDir+"/run/"+name,
		netfwd.ListenEnv+"=127.0.0.1:"+strconv.Itoa(sandbox.ProxyPort),
		fmt.Sprintf("%s=%d:%d", netfwd.UserEnv, uid, uid))
	hc.Mounts = append(slices.Clone(hc.Mounts), img.mounts...)
	hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: dir, Target: serverDir + "/run", ReadOnly: true})
	hc.CapAdd = []string{"CAP_SETGID", "CAP_SETUID"}
	hc.Tmpfs = maps.Clone(hc.Tmpfs)
	hc.Tmpfs[serverDir] = fmt.Sprintf("mode=0700,size=64k,nr_inodes=%d,noexec,nosuid,nodev", maxServerLibraries+16)
	if hc.PidsLimit != nil {
		pids := *hc.PidsLimit + forwarderThreads
		hc.PidsLimit = &pids
	}

	proxy = &sandbox.Proxy{Rules: p.Allow, Client: argv[0], Log: c.networkLog()}
	if configure != nil {
		configure(proxy)
	}
	proxy.Rules = p.Allow // no hook widens the policy's list
	var wg sync.WaitGroup
	wg.Go(func() { proxy.Serve(ln) })
	var once sync.Once
	return proxy, func() {
		once.Do(func() {
			ln.Close()
			proxy.Close()
			wg.Wait()
			os.RemoveAll(dir)
		})
	}, nil
}
