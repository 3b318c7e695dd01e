// Command load is the load generator of the MCP over HTTP benchmark. It
// starts each server under test in a process of its own, connects N
// concurrent go-sdk client sessions to it over Streamable HTTP, has every
// session call the trivial tool calc in a loop for a fixed time, and
// prints calls per second and the p50 and p99 latency of a call per
// server and session count, with ratios to a baseline server.
//
// Usage:
//
//	load -server 'NAME=COMMAND ARGS' ... [-sessions 1,16,64] [-duration 1s] [-rounds 3]
//
// COMMAND ARGS is split on spaces; the token {addr} in it is replaced by a
// free 127.0.0.1 port, and the server must serve MCP at http://{addr}/mcp.
// The servers take turns within each session count, for -rounds rounds,
// each round starting with the next server, so that they see the same
// machine load; every server's sessions are connected once per session
// count and kept across its rounds, so rounds can be short and a burst of
// other work on a shared machine falls evenly on all. Besides calls per second and
// latency it reports the server process's CPU time per call (from /proc),
// which a machine shared with other work distorts least, the load
// generator's own CPU time per call (the same go-sdk client for every
// server, on the same 2 cores), and the TCP connections the client had to
// open while measuring.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type serverSpec struct {
	name string
	argv []string
}

type serverList []serverSpec

func (l *serverList) String() string { return fmt.Sprint(*l) }
func (l *serverList) Set(s string) error {
	name, cmd, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.TrimSpace(cmd) == "" {
		return fmt.Errorf("want NAME=COMMAND, got %q", s)
	}
	*l = append(*l, serverSpec{name, strings.Fields(cmd)})
	return nil
}

type cell struct {
	server   string
	sessions int
	calls    int
	elapsed  time.Duration
	p50, p90 time.Duration
	p99      time.Duration
	dials    int64
	cpu      time.Duration // the server process's CPU time while measured
	client   time.Duration // this process's CPU time while measured
	lat      []time.Duration
}

// add merges the measurements of another round into c.
func (c *cell) add(o cell) {
	c.calls += o.calls
	c.elapsed += o.elapsed
	c.dials += o.dials
	c.cpu += o.cpu
	c.client += o.client
	c.lat = append(c.lat, o.lat...)
	if len(c.lat) > 0 {
		slices.Sort(c.lat)
		c.p50, c.p90, c.p99 = c.lat[len(c.lat)/2], c.lat[len(c.lat)*9/10], c.lat[len(c.lat)*99/100]
	}
}

func main() {
	var servers serverList
	flag.Var(&servers, "server", "a server under test, as `NAME=COMMAND ARGS` ({addr} is replaced); repeatable")
	sessionsFlag := flag.String("sessions", "1,16,64", "comma-separated `COUNTS` of concurrent sessions")
	duration := flag.Duration("duration", 3*time.Second, "measure each server for `D` per round")
	rounds := flag.Int("rounds", 1, "measure each session count in `R` rounds, the servers taking turns in each")
	warmup := flag.Duration("warmup", 500*time.Millisecond, "call for `D` before measuring, in every round")
	baseline := flag.String("baseline", "", "report ratios to the server `NAME` (default: the last one)")
	protocol := flag.String("protocol", "", "ask for protocol `VERSION` (default: the client's latest, 2026-07-28)")
	cancelEach := flag.Bool("cancel-each", true, "give each call a context of its own, canceled when the call returns")
	flag.Parse()
	if len(servers) == 0 {
		log.Fatal("no -server given")
	}
	var counts []int
	for f := range strings.SplitSeq(*sessionsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("bad session count %q", f)
		}
		counts = append(counts, n)
	}
	if *baseline == "" {
		*baseline = servers[len(servers)-1].name
	}

	urls := map[string]string{}
	pids := map[string]int{}
	var stops []func()
	// fatal stops the servers started so far (log.Fatalf runs no
	// deferred call) and exits.
	fatal := func(format string, args ...any) {
		for _, stop := range stops {
			stop()
		}
		log.Fatalf(format, args...)
	}
	for _, s := range servers {
		url, pid, stop, err := start(s)
		if err != nil {
			fatal("%s: %v", s.name, err)
		}
		stops = append(stops, stop)
		urls[s.name], pids[s.name] = url, pid
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()

	fmt.Printf("%d CPUs, %d round(s) of %v per server after %v warm-up, protocol %q, per-call contexts canceled on return: %v\n\n",
		runtimeCPUs(), *rounds, *duration, *warmup, *protocol, *cancelEach)
	fmt.Printf("| sessions | server | calls/s | p50 | p90 | p99 | server CPU per call | client CPU per call | TCP dials | calls/s vs %s | p99 vs %s | CPU per call vs %s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", *baseline, *baseline, *baseline)
	for _, n := range counts {
		// Every server's n sessions are connected once for the session
		// count and kept across its rounds, so that a round costs no
		// reconnection and rounds can be short: the shorter the turns,
		// the more evenly a burst of other work on the machine falls on
		// every server.
		fleets := make([]*fleet, len(servers))
		for j, s := range servers {
			f, err := connect(urls[s.name], pids[s.name], n, *protocol, *cancelEach)
			if err != nil {
				fatal("%s, %d sessions: %v", s.name, n, err)
			}
			fleets[j] = f
		}
		cells := make([]cell, len(servers))
		for r := range *rounds {
			// Each round starts with the next server, so that none is
			// always the one measured first (or right after another).
			for k := range servers {
				j := (r + k) % len(servers)
				s := servers[j]
				c, err := fleets[j].run(*warmup, *duration)
				if err != nil {
					fatal("%s, %d sessions: %v", s.name, n, err)
				}
				cells[j].server = s.name
				cells[j].add(c)
			}
		}
		for _, f := range fleets {
			f.close()
		}
		for _, c := range cells {
			if c.calls == 0 {
				fatal("%s, %d sessions: no calls measured in any round", c.server, n)
			}
		}
		i := slices.IndexFunc(cells, func(c cell) bool { return c.server == *baseline })
		for _, c := range cells {
			rate := float64(c.calls) / c.elapsed.Seconds()
			perCall := c.cpu / time.Duration(c.calls)
			ratio, p99ratio, cpuRatio := "", "", ""
			if i >= 0 {
				b := cells[i]
				ratio = fmt.Sprintf("%.2f×", rate/(float64(b.calls)/b.elapsed.Seconds()))
				p99ratio = fmt.Sprintf("%.2f×", float64(c.p99)/float64(b.p99))
				cpuRatio = fmt.Sprintf("%.2f×", float64(perCall)/float64(b.cpu/time.Duration(b.calls)))
			}
			fmt.Printf("| %d | %s | %.0f | %s | %s | %s | %.0f µs | %.0f µs | %d | %s | %s | %s |\n", n, c.server, rate, ms(c.p50), ms(c.p90), ms(c.p99),
				float64(perCall)/float64(time.Microsecond), float64(c.client/time.Duration(c.calls))/float64(time.Microsecond), c.dials, ratio, p99ratio, cpuRatio)
		}
	}
}

func runtimeCPUs() int {
	n := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n = strings.Count(string(b), "\nprocessor")
		if strings.HasPrefix(string(b), "processor") {
			n++
		}
	}
	return n
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// start runs the server of s on a free loopback port and waits until it
// accepts connections.
func start(s serverSpec) (url string, pid int, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	argv := make([]string, len(s.argv))
	for i, a := range s.argv {
		argv[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, fmt.Errorf("not listening on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr + "/mcp", cmd.Process.Pid, stop, nil
}

// cpuTime returns the CPU time (user and system) process pid has used,
// from /proc (Linux), or 0 when it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// selfCPU returns the CPU time (user and system) this process has used:
// the client's side of every call, the same client for every server.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is USER_HZ, the unit of CPU times in /proc: 100 on Linux.
const clockTicks = 100

// A fleet is n sessions of one client connected to one server, kept for
// all the rounds of a session count.
type fleet struct {
	pid        int
	sessions   []*mcp.ClientSession
	tr         *http.Transport
	dials      atomic.Int64
	cancelEach bool
	params     *mcp.CallToolParams
}

// connect connects n sessions to url, each of which calls calc once.
func connect(url string, pid, n int, protocol string, cancelEach bool) (*fleet, error) {
	f := &fleet{pid: pid, cancelEach: cancelEach,
		params: &mcp.CallToolParams{Name: "calc", Arguments: map[string]any{"expression": "2+3"}}}
	dialer := &net.Dialer{}
	f.tr = &http.Transport{
		MaxIdleConns:        2 * n,
		MaxIdleConnsPerHost: 2 * n,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
	}
	hc := &http.Client{Transport: f.tr}
	for range n {
		c := mcp.NewClient(&mcp.Implementation{Name: "mcphttp-load", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			f.close()
			return nil, fmt.Errorf("connect: %w", err)
		}
		f.sessions = append(f.sessions, cs)
		if err := f.call(cs); err != nil {
			f.close()
			return nil, err
		}
	}
	return f, nil
}

// close ends the fleet's sessions and connections.
func (f *fleet) close() {
	for _, cs := range f.sessions {
		cs.Close()
	}
	f.tr.CloseIdleConnections()
}

// call calls calc in session cs and checks the result.
func (f *fleet) call(cs *mcp.ClientSession) error {
	ctx := context.Background()
	if f.cancelEach {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	res, err := cs.CallTool(ctx, f.params)
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "5" {
		return fmt.Errorf("unexpected content %+v", res.Content[0])
	}
	return nil
}

// run has every session of f call calc in a loop: for warmup unmeasured,
// then for d measured.
func (f *fleet) run(warmup, d time.Duration) (cell, error) {
	n := len(f.sessions)
	begin := time.Now()
	measureFrom := begin.Add(warmup)
	end := measureFrom.Add(d)
	lat := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	// The counters are read when the measured part begins, whether or
	// not a call starts then.
	var dialsBefore int64
	var cpuBefore, clientBefore time.Duration
	begun := make(chan struct{})
	time.AfterFunc(time.Until(measureFrom), func() {
		dialsBefore, cpuBefore, clientBefore = f.dials.Load(), cpuTime(f.pid), selfCPU()
		close(begun)
	})
	for i, cs := range f.sessions {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if t0.After(end) {
					return
				}
				if err := f.call(cs); err != nil {
					errs[i] = err
					return
				}
				if t0.After(measureFrom) {
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	<-begun
	cpuAfter, clientAfter := cpuTime(f.pid), selfCPU()
	for _, err := range errs {
		if err != nil {
			return cell{}, err
		}
	}
	// A round in which no call started and ended (a server stalled for
	// the whole round) counts as a round of no calls: with short rounds
	// that happens, and it is the server's to bear, not a reason to stop.
	all := slices.Concat(lat...)
	return cell{
		sessions: n,
		calls:    len(all),
		elapsed:  d,
		lat:      all,
		dials:    f.dials.Load() - dialsBefore,
		cpu:      cpuAfter - cpuBefore,
		client:   clientAfter - clientBefore,
	}, nil
}
