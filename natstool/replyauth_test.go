package natstool_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
)

// logWatch is a slog handler that tells, on a channel, of each record
// whose message holds one of the words it watches.
type logWatch struct {
	words []string
	hits  chan string
}

func newLogWatch(words ...string) *logWatch {
	return &logWatch{words: words, hits: make(chan string, 64)}
}

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool { text += " " + a.Key + "=" + a.Value.String(); return true })
	for _, w := range l.words {
		if strings.Contains(text, w) {
			select {
			case l.hits <- text:
			default:
			}
			break
		}
	}
	return nil
}
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logWatch) WithGroup(string) slog.Handler      { return l }

// holdTool returns a registry with "hold", which tells started when it
// runs, returns "held" once it takes a token from release, and tells
// ended how its context ended otherwise.
func holdTool(started chan<- struct{}, release <-chan struct{}, ended chan<- error) *tool.Registry {
	reg := tool.NewRegistry(tool.WithLogger(quiet))
	reg.Register(tool.Must(tool.New("hold", "Holds until released or canceled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "held", nil
		case <-ctx.Done():
			ended <- context.Cause(ctx)
			return "", ctx.Err()
		}
	})))
	return reg
}

// spy subscribes, besides the workers' queue group, to every call of the
// service's tools, and hands over the reply subjects it sees: what anyone
// allowed to subscribe there learns.
func spy(t *testing.T, nc *nats.Conn) <-chan string {
	t.Helper()
	replies := make(chan string, 16)
	if _, err := nc.Subscribe(natstool.DefaultSubjectPrefix+"."+natstool.DefaultServiceName+".*", func(m *nats.Msg) {
		replies <- m.Reply
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return replies
}

// TestForgedCallCancelIgnored is an attack on a plain call's cancel: the
// service's cancel subject took the call's reply subject as the whole
// proof, so anyone who saw the reply subject (a subscriber to the
// tool's subject, any process on the caller's inbox) ended another
// principal's call. Now a call's reply subject carries the digest of a
// secret only its caller holds, and the worker ends a call only for a
// cancel that gives that secret; other cancels are ignored and logged.
// The control is the caller's own cancel, which still ends the call.
func TestForgedCallCancelIgnored(t *testing.T) {
	s := startServer(t, false)
	started, release, ended := make(chan struct{}, 2), make(chan struct{}), make(chan error, 2)
	watch := newLogWatch("cancel refused")
	serve(t, connect(t, s), holdTool(started, release, ended), natstool.ServeOptions{Logger: slog.New(watch)})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	attacker := connect(t, s)
	seen := spy(t, attacker)

	done := make(chan tool.Result, 1)
	go func() { done <- local.Execute(context.Background(), "hold", nil) }()
	<-started
	reply := <-seen
	cancelSubject := natstool.DefaultSubjectPrefix + "." + natstool.DefaultServiceName + ".$cancel"
	// The old form (the reply subject alone), a made-up secret, and one
	// longer than a secret.
	for _, body := range []string{reply, reply + " AAAAAAAAAAAAAAAAAAAAAA", reply + " " + strings.Repeat("A", 4096)} {
		if err := attacker.Publish(cancelSubject, []byte(body)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-ended:
			t.Fatalf("a forged cancel (%.80q) ended the caller's call: %v", body, err)
		case <-watch.hits:
		case <-time.After(20 * time.Second):
			t.Fatal("the worker neither ended the call nor refused the forged cancel")
		}
	}
	release <- struct{}{}
	if res := <-done; res.IsError || res.Output != "held" {
		t.Fatalf("the call after forged cancels: %+v", res)
	}

	// The control: the caller's own cancel ends its call.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- local.Execute(ctx, "hold", nil) }()
	<-started
	<-seen
	cancel()
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "caller canceled") {
			t.Errorf("the worker's call ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the caller's own cancel did not end the call")
	}
	<-done
}
