package natstool_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
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
// header of its own, to services of protocol 2, and in HeaderTimeout to
// services with a protocol 1 worker among theirs. A monitor on the tool's
// subject sees each request as the workers do.
func TestWireProtocolNegotiation(t *testing.T) {
	tests := []struct {
		name      string
		v2, v1    bool   // which workers serve service "svc"
		principal string // sent with WithCallHeaders when set
		wantMark  bool
	}{
		{"protocol 2", true, false, "", true},
		{"protocol 2 with a principal", true, false, "alice", true},
		{"protocol 1", false, true, "", false},
		{"protocol 1 with a principal", false, true, "alice", false},
		{"protocol 1 and 2 in one queue group", true, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, false)
			if tt.v2 {
				var n atomic.Int64
				serve(t, connect(t, s), counting(t, &n), natstool.WithServiceName("svc"))
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
			var opts []natstool.ImportOption
			if tt.principal != "" {
				opts = append(opts, natstool.WithCallHeaders(func(context.Context) nats.Header {
					return nats.Header{"Principal": {tt.principal}, natstool.HeaderTimeout: {"1"}}
				}))
			}
			local := tool.NewRegistry(tool.WithLogger(quiet))
			importInto(t, connect(t, s), local, opts...)

			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if res := local.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":40}`)); res.Output != "42" {
				t.Fatalf("call: %+v", res)
			}
			m := <-seen
			last := m.Reply[strings.LastIndexByte(m.Reply, '.')+1:]
			_, deadline, _ := strings.Cut(last, natstool.ReplyTimeoutMark)
			hdr := m.Header.Get(natstool.HeaderTimeout)
			if tt.wantMark {
				if ms, err := strconv.ParseInt(deadline, 10, 64); err != nil || ms <= 0 || ms > 3600000 {
					t.Errorf("reply subject %q: want the hour the caller has, in ms, after %q", m.Reply, natstool.ReplyTimeoutMark)
				}
				if hdr != "" {
					t.Errorf("%s = %q sent to a protocol 2 service", natstool.HeaderTimeout, hdr)
				}
			} else {
				if strings.Contains(last, natstool.ReplyTimeoutMark) {
					t.Errorf("reply subject %q carries a deadline to a protocol 1 worker", m.Reply)
				}
				if ms, err := strconv.ParseInt(hdr, 10, 64); err != nil || ms <= 1 || ms > 3600000 {
					t.Errorf("%s = %q, want the hour the caller has, in ms", natstool.HeaderTimeout, hdr)
				}
			}
			if got := m.Header.Get("Principal"); got != tt.principal {
				t.Errorf("principal header %q, want %q", got, tt.principal)
			}
			if tt.principal == "" && tt.wantMark && len(m.Header) != 0 {
				t.Errorf("a plain protocol 2 call carries headers: %v", m.Header)
			}
		})
	}
}

// A worker takes the caller's deadline from the reply subject or from the
// header, the header winning when there are both; a deadline it cannot
// read refuses the call as invalid arguments, and the tool does not run.
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
	const hour, threeHours = "~t3600000", "3"
	tests := []struct {
		name, suffix, header string
		want                 string // output, or the kind of an error
	}{
		{"none", "", "", "none"},
		{"reply subject", hour, "", "1"},
		{"header", "", "10800000", threeHours},
		{"both: the header wins", hour, "10800000", threeHours},
		{"a bad reply subject under a good header", "~tnope", "10800000", threeHours},
		{"a bad header over a good reply subject", hour, "soon", string(tool.KindInvalidArguments)},
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
				msg.Header = nats.Header{natstool.HeaderTimeout: {tt.header}}
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
