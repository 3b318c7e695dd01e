package natstool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startCluster runs n embedded NATS servers joined by cluster routes on
// loopback, and waits until every one has a route to every other.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	var servers []*server.Server
	var seed string
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "clawtool", Host: "127.0.0.1", Port: -1},
		}
		if seed != "" {
			opts.Routes = server.RoutesFromStr(seed)
		}
		s := runServer(t, opts)
		if seed == "" {
			seed = "nats://" + s.ClusterAddr().String()
		}
		servers = append(servers, s)
	}
	waitFor(t, "the cluster's routes", func() bool {
		for _, s := range servers {
			if s.NumRoutes() < n-1 {
				return false
			}
		}
		return true
	})
	return servers
}

// connectFirst connects to the servers' URLs in order: the first unless
// it is down, the others on reconnect.
func connectFirst(t *testing.T, servers ...*server.Server) *nats.Conn {
	t.Helper()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.DontRandomize(),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// A 3-node cluster loses the node that the caller and one worker use:
// both move to the other nodes, every call ends with a result, and calls
// go on, served by all three workers.
func TestClusterLosesANode(t *testing.T) {
	servers := startCluster(t, 3)
	var counts [3]atomic.Int64
	var workers []*nats.Conn
	for i := range counts {
		// Worker i prefers node i.
		order := append([]*server.Server{servers[i]}, servers[:i]...)
		order = append(order, servers[i+1:]...)
		wnc := connectFirst(t, order...)
		workers = append(workers, wnc)
		serve(t, wnc, counting(t, &counts[i]))
	}
	nc := connectFirst(t, servers...)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, nc, local)
	call := func(i int) tool.Result {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return local.Execute(ctx, "add", json.RawMessage(fmt.Sprintf(`{"a":%d,"b":1}`, i)))
	}
	waitFor(t, "calls to reach all three workers", func() bool {
		call(0)
		return counts[0].Load() > 0 && counts[1].Load() > 0 && counts[2].Load() > 0
	})

	// Calls keep going while node 0 dies; each ends with a result.
	stop := make(chan struct{})
	during := make(chan []tool.Result, 1)
	go func() {
		var out []tool.Result
		for i := 0; ; i++ {
			select {
			case <-stop:
				during <- out
				return
			default:
			}
			out = append(out, call(i))
		}
	}()
	servers[0].Shutdown()
	waitFor(t, "the caller to move to another node", func() bool {
		return nc.IsConnected() && nc.ConnectedUrl() != servers[0].ClientURL()
	})
	close(stop)
	for _, res := range <-during {
		if res.IsError && res.Kind != tool.KindUnavailable {
			t.Errorf("a call during the loss ended with %+v, want a result or unavailable", res)
		}
	}

	waitFor(t, "a call to succeed", func() bool { return !call(1).IsError })
	var before [3]int64
	for i := range counts {
		before[i] = counts[i].Load()
	}
	for i := range 60 {
		if res := call(i); res.IsError || res.Output != fmt.Sprint(i+1) {
			t.Fatalf("call %d after the loss: %+v", i, res)
		}
	}
	// The worker of the lost node reconnects elsewhere and serves again.
	waitFor(t, "worker 0 to move to another node", func() bool {
		return workers[0].IsConnected() && workers[0].ConnectedUrl() != servers[0].ClientURL()
	})
	i := 0
	waitFor(t, "every worker to serve calls after the loss", func() bool {
		i++
		if res := call(i); res.IsError || res.Output != fmt.Sprint(i+1) {
			t.Fatalf("call %d after the loss: %+v", i, res)
		}
		return counts[0].Load() > before[0] && counts[1].Load() > before[1] && counts[2].Load() > before[2]
	})
}

// A worker may start before its server: a connection made with
// RetryOnFailedConnect knows no max payload until it connects, and Serve
// must neither refuse the registry nor treat every result as too large.
func TestServeBeforeTheServerIsUp(t *testing.T) {
	s := startServer(t, false)
	port := s.Addr().(*net.TCPAddr).Port
	s.Shutdown()
	s.WaitForShutdown()

	wnc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port), nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	if wnc.IsConnected() {
		t.Fatal("connected with no server")
	}
	var n atomic.Int64
	type served struct {
		svc *natstool.Service
		err error
	}
	serving := make(chan served, 1)
	worker := counting(t, &n)
	go func() {
		svc, err := natstool.Serve(wnc, worker, &natstool.ServeOptions{Logger: quiet})
		serving <- served{svc, err}
	}()
	opts := &server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true}
	s2, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s2.Start()
	t.Cleanup(func() {
		s2.Shutdown()
		s2.WaitForShutdown()
	})
	if !s2.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	sv := <-serving
	if sv.err != nil {
		t.Fatalf("Serve: %v", sv.err)
	}
	defer sv.svc.Stop()
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s2), local)
	if res := local.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`)); res.IsError || res.Output != "3" {
		t.Fatalf("call: %+v", res)
	}
}
