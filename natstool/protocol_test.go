package natstool_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// serveProtocol1 serves, as a worker of wire protocol 1 would, a tool
// "add" of the given service that answers 42 to every call.
func serveProtocol1(t *testing.T, nc *nats.Conn, service string) {
	t.Helper()
	svc, err := micro.AddService(nc, micro.Config{
		Name: service, Version: "0.0.1", QueueGroup: service,
		Metadata: map[string]string{natstool.MetadataProtocol: "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop() })
	def := `{"name":"add","description":"Adds.","input_schema":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}}`
	err = svc.AddEndpoint("add", micro.HandlerFunc(func(r micro.Request) { r.Respond([]byte(`{"output":"42"}`)) }),
		micro.WithEndpointSubject(natstool.DefaultSubjectPrefix+"."+service+".add"),
		micro.WithEndpointMetadata(map[string]string{natstool.MetadataTool: def}))
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
}

// An importer sends the deadline at the end of the reply subject, with no
// header of its own, and headers only when CallHeaders gives some (a
// header named as protocol 1's deadline header was is just a header). It
// imports no tool of a service that has a protocol 1 worker, which would
// take the deadline from a header: such a worker would run the call
// without its caller's deadline. A monitor on the tool's subject sees
// each request as the workers do.
func TestWireProtocolNegotiation(t *testing.T) {
	const oldHeader = "Clawtool-Timeout-Ms" // protocol 1's deadline header
	tests := []struct {
		name      string
		v2, v1    bool   // which workers serve service "svc"
		principal string // sent with CallHeaders when set
		imported  bool
	}{
		{"protocol 2", true, false, "", true},
		{"protocol 2 with a principal", true, false, "alice", true},
		{"protocol 1", false, true, "", false},
		{"protocol 1 and 2 in one queue group", true, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, false)
			if tt.v2 {
				var n atomic.Int64
				serve(t, connect(t, s), counting(t, &n), natstool.ServeOptions{Name: "svc"})
			}
			if tt.v1 {
				serveProtocol1(t, connect(t, s), "svc")
			}
			seen := make(chan *nats.Msg, 1)
			mon := connect(t, s)
			if _, err := mon.Subscribe(natstool.DefaultSubjectPrefix+".svc.add", func(m *nats.Msg) { seen <- m }); err != nil {
				t.Fatal(err)
			}
			mon.Flush()
			logs := &syncWriter{w: &strings.Builder{}}
			opts := natstool.ImportOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))}
			if tt.principal != "" {
				opts.CallHeaders = func(context.Context) nats.Header {
					return nats.Header{"Principal": {tt.principal}, oldHeader: {"1"}}
				}
			}
			local := tool.NewRegistry(tool.WithLogger(quiet))
			importInto(t, connect(t, s), local, opts)
			if _, ok := local.Get("add"); ok != tt.imported {
				t.Fatalf("imported %v, want %v", ok, tt.imported)
			}
			if !tt.imported {
				if !strings.Contains(logs.String(), "wire protocol 1") || !strings.Contains(logs.String(), "upgrade") {
					t.Errorf("the log does not say why the tool was left out:\n%s", logs.String())
				}
				return
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if res := local.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":40}`)); res.Output != "42" {
				t.Fatalf("call: %+v", res)
			}
			m := <-seen
			last := m.Reply[strings.LastIndexByte(m.Reply, '.')+1:]
			_, deadline, _ := strings.Cut(last, natstool.ReplyTimeoutMark)
			if ms, err := strconv.ParseInt(deadline, 10, 64); err != nil || ms <= 1000 || ms > 3600000 {
				t.Errorf("reply subject %q: want the hour the caller has, in ms, after %q", m.Reply, natstool.ReplyTimeoutMark)
			}
			if got := m.Header.Get("Principal"); got != tt.principal {
				t.Errorf("principal header %q, want %q", got, tt.principal)
			}
			if tt.principal == "" && len(m.Header) != 0 {
				t.Errorf("a plain call carries headers: %v", m.Header)
			}
		})
	}
}

// A worker takes the caller's deadline from the reply subject only: a
// header named as protocol 1's was is ignored. A deadline it cannot read
// refuses the call as invalid arguments, and the tool does not run.
func TestWorkerReadsTheDeadline(t *testing.T) {
	s := startServer(t, false)
	var runs atomic.Int64
	hours := tool.Must(tool.New("hours", "Says how many hours its context has left.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		dl, ok := ctx.Deadline()
		if !ok {
			return "none", nil
		}
		return strconv.Itoa(int(time.Until(dl).Round(time.Hour) / time.Hour)), nil
	}, tool.WithTimeout(-1)))
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultTimeout(-1))
	worker.Register(hours)
	serve(t, connect(t, s), worker)
	nc := connect(t, s)
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox + ".*")
	if err != nil {
		t.Fatal(err)
	}
	const hour = "~t3600000"
	tests := []struct {
		name, suffix, header string
		want                 string // output, or the kind of an error
	}{
		{"none", "", "", "none"},
		{"reply subject", hour, "", "1"},
		{"protocol 1's header alone: no deadline", "", "10800000", "none"},
		{"protocol 1's header and the reply subject: the subject's", hour, "10800000", "1"},
		{"a bad header over a good reply subject: ignored", hour, "soon", "1"},
		{"a bad reply subject under a good header", "~tnope", "10800000", string(tool.KindInvalidArguments)},
		{"no digits", "~t", "", string(tool.KindInvalidArguments)},
		{"zero", "~t0", "", string(tool.KindInvalidArguments)},
		{"negative", "~t-3600000", "", string(tool.KindInvalidArguments)},
		{"not a number", "~t1h", "", string(tool.KindInvalidArguments)},
		{"more than a year", "~t31536000001", "", string(tool.KindInvalidArguments)},
		{"huge", "~t" + strings.Repeat("9", 2000), "", string(tool.KindInvalidArguments)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runs.Load()
			msg := &nats.Msg{Subject: natstool.DefaultSubjectPrefix + ".clawtool.hours", Reply: inbox + "." + strconv.Itoa(i) + tt.suffix, Data: []byte(`{}`)}
			if tt.header != "" {
				msg.Header = nats.Header{"Clawtool-Timeout-Ms": {tt.header}}
			}
			if err := nc.PublishMsg(msg); err != nil {
				t.Fatal(err)
			}
			m, err := sub.NextMsg(20 * time.Second) // ok-wallclock: only a broken worker waits this long
			if err != nil {
				t.Fatal(err)
			}
			if m.Subject != msg.Reply {
				t.Fatalf("answer on %q, want %q", m.Subject, msg.Reply)
			}
			var res tool.Result
			if err := json.Unmarshal(m.Data, &res); err != nil {
				t.Fatalf("%s: %v", m.Data, err)
			}
			got := res.Output
			if res.IsError {
				got = string(res.Kind)
				if len(res.Error) > 300 {
					t.Errorf("the error repeats the hostile subject: %d bytes", len(res.Error))
				}
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %s", res, tt.want)
			}
			if ran := runs.Load() > before; ran == (tt.want == string(tool.KindInvalidArguments)) {
				t.Errorf("tool ran: %v, on %+v", ran, res)
			}
		})
	}
}

// syncWriter makes a writer safe for the importer's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String returns what was written to a strings.Builder behind s.
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.(*strings.Builder).String()
}
