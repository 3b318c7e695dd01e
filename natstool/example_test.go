package natstool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// A worker serves its registry's tools on NATS; a caller imports them
// into its own registry, where they are ordinary tools. Both take an
// options struct; nil means the defaults.
func Example() {
	// An embedded NATS server on a loopback port, for the example.
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	go s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10 * time.Second) {
		panic("nats-server did not start")
	}

	// The worker.
	wnc, _ := nats.Connect(s.ClientURL())
	defer wnc.Close()
	worker := tool.NewRegistry()
	worker.Register(tool.Must(tool.New("add", "Adds two numbers.", func(ctx context.Context, in struct{ A, B int }) (int, error) {
		return in.A + in.B, nil
	})))
	svc, err := natstool.Serve(wnc, worker, &natstool.ServeOptions{Name: "math"})
	if err != nil {
		panic(err)
	}
	defer svc.Stop()

	// The caller.
	cnc, _ := nats.Connect(s.ClientURL())
	defer cnc.Close()
	local := tool.NewRegistry()
	im, err := natstool.Import(context.Background(), cnc, local, &natstool.ImportOptions{
		Prefix: "remote_",
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer im.Close()

	res := local.Execute(context.Background(), "remote_add", json.RawMessage(`{"A":2,"B":40}`))
	fmt.Println(res.Output)
	// Output: 42
}
