package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestServeNATSDurableTasks: serve --http --nats on a bus with JetStream
// keeps its tasks there (it creates the tasks' stream and bucket, and
// consumes the stream as a worker); on a bus without JetStream it says on
// standard error that tasks stay in memory, and serves all the same (the
// control).
func TestServeNATSDurableTasks(t *testing.T) {
	js, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	go js.Start()
	if !js.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() {
		js.Shutdown()
		js.WaitForShutdown()
	})
	startCLI(t, "serving MCP at", nil, "serve", "--http", "127.0.0.1:0", "--nats", js.ClientURL())
	nc, err := nats.Connect(js.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	jsc, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := jsc.Stream(ctx, mcptasks.DefaultStream)
	if err != nil {
		t.Fatalf("the tasks' stream: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Config.Storage != jetstream.FileStorage || info.Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("the tasks' stream: %+v %v", info, err)
	}
	if _, err := jsc.KeyValue(ctx, mcptasks.DefaultBucket); err != nil {
		t.Errorf("the tasks' bucket: %v", err)
	}
	if _, err := st.Consumer(ctx, "workers"); err != nil {
		t.Errorf("no worker consumes the tasks: %v", err)
	}

	// The control: without JetStream, serve still serves.
	startCLI(t, "serving MCP at", nil, "serve", "--http", "127.0.0.1:0", "--nats", startNATS(t))
}

// TestServeNATSWithoutJetStreamWarns: the warning that tasks stay in
// memory comes before the server is ready.
func TestServeNATSWithoutJetStreamWarns(t *testing.T) {
	plain := startNATS(t)
	_, line := startCLI(t, "tasks are kept in memory", nil, "serve", "--http", "127.0.0.1:0", "--nats", plain)
	if !strings.Contains(line, "has no JetStream") {
		t.Errorf("warning %q", line)
	}
}
