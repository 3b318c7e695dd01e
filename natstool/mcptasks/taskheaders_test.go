package mcptasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestForgedTaskHeaders is an attack on the headers a durable task's
// job message carries besides the signed principal claim: the time the
// task expires, which ends its run, and the client's capabilities, which
// say whether its call may ask the client. A publisher on the bus who
// can replace a job's message (here: deletes it from the stream and
// publishes a copy) changes them; the claim's signature covered neither,
// so the worker ran the call with the forged expiry (a run that outlives
// its task, which no client can cancel) or capabilities. A signed
// message whose task headers were changed must be refused. The control
// is the message as submitted, which runs, its deadline within the TTL.
func TestForgedTaskHeaders(t *testing.T) {
	far := time.Now().Add(1000 * time.Hour).UTC().Format(time.RFC3339Nano)
	rows := []struct {
		name  string
		forge func(h nats.Header)
	}{
		{"as submitted (control)", func(nats.Header) {}},
		{"expiry extended", func(h nats.Header) { h.Set("Clawtool-Task-Expires", far) }},
		{"expiry given twice", func(h nats.Header) { h.Add("Clawtool-Task-Expires", far) }},
		{"capabilities added", func(h nats.Header) { h.Set("Clawtool-Task-Capabilities", `{"elicitation":{}}`) }},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			ns := startNATS(t)
			nc := connect(t, ns)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			store, err := mcptasks.Open(ctx, nc, &mcptasks.Options{Jobs: principalJobs()})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "deadline", Args: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			// The attacker replaces the job's message with a copy whose
			// task headers are forged.
			js, _ := jetstream.New(nc)
			stream, err := js.Stream(ctx, mcptasks.DefaultStream)
			if err != nil {
				t.Fatal(err)
			}
			m, err := stream.GetLastMsgForSubject(ctx, mcptasks.DefaultSubject+".run.deadline")
			if err != nil {
				t.Fatal(err)
			}
			h := nats.Header(http.Header(m.Header).Clone())
			h.Del(jetstream.MsgIDHeader) // or JetStream drops the copy as a duplicate
			r.forge(h)
			if err := stream.DeleteMsg(ctx, m.Sequence); err != nil {
				t.Fatal(err)
			}
			if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Data: m.Data, Header: h}); err != nil {
				t.Fatal(err)
			}
			ran := make(chan time.Duration, 1)
			reg := tool.NewRegistry()
			reg.Register(tool.Must(tool.New("deadline", "Says how long it may run.", func(ctx context.Context, in struct{}) (string, error) {
				d, _ := ctx.Deadline()
				ran <- time.Until(d)
				return "ran", nil
			}, tool.WithTask(tool.TaskOptional), tool.WithTimeout(10000*time.Hour))))
			w, err := store.Jobs().Work(reg, "w", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var got mcptool.TaskRecord
			eventually(t, "the task ends", func() bool {
				got, err = store.Get(ctx, "alice", rec.TaskID)
				return err == nil && got.Status.Terminal()
			})
			control := strings.Contains(r.name, "control")
			select {
			case left := <-ran:
				if !control {
					t.Fatalf("the forged message ran its call (%v left to run)", left.Round(time.Hour))
				}
				if ttl := (mcptool.TaskLimits{}).WithDefaults().TTL; left > ttl {
					t.Fatalf("control: the run may go on %v, past the task's TTL %v", left, ttl)
				}
			default:
				if control {
					t.Fatalf("control: the call did not run: %+v", got.ToolResult)
				}
				if got.ToolResult == nil || got.ToolResult.Kind != tool.KindDenied || !strings.Contains(got.ToolResult.Error, "refused") {
					t.Fatalf("the forged message ended as %+v, want denied: its claim refused", got.ToolResult)
				}
			}
		})
	}
}
