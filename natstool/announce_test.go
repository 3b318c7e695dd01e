package natstool_test

import (
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
)

// TestForgedAnnouncementsIgnored is an attack on discovery's
// announcements: clawtool.changed takes messages from any publisher, and
// an importer took "instance X stopped" or "instance Y replaces X" at
// its word, removing X's tools from its registry until its next full
// scan (15 s by default, or never with scans off), so that anyone on
// the bus could take a worker's tools away from every caller, again and
// again. An instance id is no secret: $SRV.PING answers it to anyone.
// Now an importer removes an instance on an announcement only when the
// instance no longer answers its ping; otherwise it keeps it, and logs
// why. The control is the worker's own Stop, whose announcement removes
// its tools.
func TestForgedAnnouncementsIgnored(t *testing.T) {
	s := startServer(t, false)
	var n atomic.Int64
	svc := serve(t, connect(t, s), counting(t, &n))
	watch := newLogWatch("announcement ignored")
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{Logger: slog.New(watch)})
	if _, ok := local.Get("add"); !ok {
		t.Fatal("add was not imported")
	}
	attacker := connect(t, s)
	for _, a := range []natstool.Announcement{
		{Service: natstool.DefaultServiceName, ID: svc.ID(), Stopped: true},
		{Service: "aaa", ID: "NOTANINSTANCE", Replaces: svc.ID()},
	} {
		b, _ := json.Marshal(a)
		if err := attacker.Publish(natstool.ChangeSubject, b); err != nil {
			t.Fatal(err)
		}
		bound := time.After(20 * time.Second)
	wait:
		for {
			if _, ok := local.Get("add"); !ok {
				t.Fatalf("a forged announcement %s removed the worker's tool", b)
			}
			select {
			case <-watch.hits:
				break wait
			case <-bound:
				t.Fatalf("the forged announcement %s was neither taken nor ignored", b)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if _, ok := local.Get("add"); !ok {
			t.Fatalf("a forged announcement %s removed the worker's tool", b)
		}
	}
	// The control: the worker's own Stop removes its tool.
	svc.Stop()
	waitFor(t, "the stopped worker's tool to go", func() bool {
		_, ok := local.Get("add")
		return !ok
	})
}
