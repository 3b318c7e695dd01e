package plugins

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"go.uber.org/goleak"
)

// recorder keeps the log records it is given.
type recorder struct {
	mu   *sync.Mutex
	recs *[]slog.Record
}

func newRecorder() recorder { return recorder{&sync.Mutex{}, new([]slog.Record)} }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	*r.recs = append(*r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r recorder) WithGroup(string) slog.Handler      { return r }

// events returns the "event" of each record, and the "taken" of the
// last record that has one.
func (r recorder) events() (events []string, taken []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range *r.recs {
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "event":
				events = append(events, a.Value.String())
			case "taken":
				taken, _ = a.Value.Any().([]string)
			}
			return true
		})
	}
	return events, taken
}

// TestAddedServers adds three servers to a configuration of one: they
// start in their order, so the second finds the names the first serves
// taken and reports them in one record, with the names, to its own
// logger; the configuration's entry of the same name as an added server
// is left out, and its other entry loads after the added ones, its names
// taken too; an added server that does not check fails alone; the
// configuration's sandbox policy confines the added stdio servers.
func TestAddedServers(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSpawnThread)
	first, second, bad := newRecorder(), newRecorder(), newRecorder()
	var hostLog bytes.Buffer
	reg := tool.NewRegistry()
	h := NewHost(reg, WithLogger(slog.New(slog.NewTextHandler(&hostLog, nil))), WithServers(
		AddedServer{Name: "first", Server: fixture(t, "", "echo", "a"), Logger: slog.New(first)},
		AddedServer{Name: "second", Server: fixture(t, "", "echo", "b"), Logger: slog.New(second)},
		AddedServer{Name: "bad", Server: Server{Command: "x", Prefix: "a.b"}, Logger: slog.New(bad)},
	))
	defer h.Close()
	c := &Config{Servers: map[string]Server{
		"first": fixture(t, "", "from_config"),
		"third": fixture(t, "", "echo", "c"),
	}}
	h.Apply(t.Context(), c)

	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if s := st["first"]; s.State != Ready || s.Tools != 3 || s.Err != "" {
		t.Errorf("first: %+v, want ready with echo, a and wait", s)
	}
	if s := st["second"]; s.State != Ready || s.Tools != 1 || s.Err != "2 of its tools left out, their names are taken: echo, wait" {
		t.Errorf("second: %+v, want ready with b alone, echo and wait taken", s)
	}
	if s := st["third"]; s.State != Ready || s.Tools != 1 || !strings.Contains(s.Err, "their names are taken: echo, wait") {
		t.Errorf("third: %+v, want ready with c alone, loaded after the added servers", s)
	}
	if s := st["bad"]; s.State != Failed || !strings.Contains(s.Err, "prefix") {
		t.Errorf("bad: %+v, want failed on its prefix", s)
	}
	if _, ok := reg.Get("from_config"); ok {
		t.Errorf("the configuration's entry named like an added server was loaded")
	}
	if !strings.Contains(hostLog.String(), `MCP server \"first\" of the configuration left out`) {
		t.Errorf("host log:\n%s\nwant the configuration's \"first\" reported", hostLog.String())
	}
	if want := []string{"a", "b", "c", "echo", "wait"}; !slices.Equal(names(reg), want) {
		t.Errorf("registry holds %v, want %v", names(reg), want)
	}

	events, taken := second.events()
	if !slices.Equal(events, []string{EventTaken}) || !slices.Equal(taken, []string{"echo", "wait"}) {
		t.Errorf("second's log: events %q, taken %q; want one %q record with echo and wait", events, taken, EventTaken)
	}
	if events, _ := first.events(); len(events) != 0 {
		t.Errorf("first's log: %q, want nothing", events)
	}
	if events, _ := bad.events(); !slices.Equal(events, []string{EventFailed}) {
		t.Errorf("bad's log: %q, want one %q record", events, EventFailed)
	}
	if strings.Contains(hostLog.String(), `\"second\"`) || strings.Contains(hostLog.String(), `\"bad\"`) {
		t.Errorf("the host's log has records of added servers with loggers of their own:\n%s", hostLog.String())
	}

	// Under a sandbox policy, an added stdio server is confined like the
	// configuration's own (whether it then starts depends on the
	// machine's sandbox; the confinement does not).
	h.Apply(t.Context(), &Config{Sandbox: &sandbox.Policy{}})
	for _, s := range h.Status() {
		if s.Name == "first" && s.Confinement != ConfinedNative {
			t.Errorf("first under a sandbox policy: %+v, want confined", s)
		}
	}
}
