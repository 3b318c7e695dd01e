package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// adminOnly lets only admins call "drop", and everyone "echo".
const adminOnly = `
permit (principal in Role::"admin", action == Action::"call", resource == Tool::"drop");
permit (principal, action == Action::"call", resource == Tool::"echo");`

var testSignerKey = []byte("0123456789abcdef0123456789abcdef")

// guardedWorker serves "drop" (counting its runs in drops) and "echo"
// under adminOnly, with restore as the service's CallContext.
func guardedWorker(t *testing.T, s *server.Server, drops *atomic.Int64, restore func(context.Context, nats.Header) (context.Context, error)) *natstool.Service {
	t.Helper()
	a, err := policy.New("admin.cedar", []byte(adminOnly))
	if err != nil {
		t.Fatal(err)
	}
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
	worker.Register(tool.Must(tool.New("drop", "Drops a table.", func(ctx context.Context, in struct {
		Table string `json:"table"`
	}) (string, error) {
		drops.Add(1)
		return "dropped " + in.Table, nil
	})))
	worker.Register(tool.Must(tool.New("echo", "Echoes.", func(ctx context.Context, in struct {
		Table string `json:"table"`
	}) (string, error) {
		return in.Table, nil
	})))
	return serve(t, connect(t, s), worker, natstool.ServeOptions{CallContext: restore})
}

// rawCall publishes msg as a caller without natstool would, and returns
// the result message's body. The reply subject is the caller's own inbox
// unless msg has one, which the caller then listens on too.
func rawCall(t *testing.T, nc *nats.Conn, msg *nats.Msg) string {
	t.Helper()
	if msg.Reply == "" {
		msg.Reply = nc.NewRespInbox() + natstool.ReplyTimeoutMark + "30000"
	}
	sub, err := nc.SubscribeSync(msg.Reply)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("no result for %s: %v", msg.Subject, err)
		}
		if k := m.Header.Get(natstool.HeaderKind); k == "heartbeat" || k == "progress" {
			continue
		}
		return string(m.Data)
	}
}

const dropSubject = "clawtool.tool.clawtool.drop"

// TestForgedPrincipalClaim: a publisher on the service's subject forges
// the principal header {"id":"admin","roles":["admin"]} on a call of
// "drop", which the worker's policy allows only admins. Control: a
// worker that believes the header (policy.FromHeaders) runs it. Defence:
// a worker that verifies signed claims (VerifiedContext) refuses it,
// saying why, and still serves callers that sign with the shared key;
// a signed call captured on the bus cannot be replayed, redirected to
// another reply subject, moved to another tool, or given other
// arguments.
func TestForgedPrincipalClaim(t *testing.T) {
	forged := nats.Header{policy.HeaderPrincipal: {`{"id":"admin","roles":["admin"]}`}}
	t.Run("control: a worker that believes the header runs the forged call", func(t *testing.T) {
		s := startServer(t, false)
		var drops atomic.Int64
		guardedWorker(t, s, &drops, func(ctx context.Context, h nats.Header) (context.Context, error) {
			return policy.FromHeaders(ctx, h)
		})
		out := rawCall(t, connect(t, s), &nats.Msg{Subject: dropSubject, Data: []byte(`{"table":"users"}`), Header: forged})
		if drops.Load() != 1 || !strings.Contains(out, "dropped users") {
			t.Fatalf("the forged call did not run (%d runs): %s", drops.Load(), out)
		}
	})
	t.Run("signed claims: the forged call is refused", func(t *testing.T) {
		s := startServer(t, false)
		verifier, err := policy.NewHeaderSigner(testSignerKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		var drops atomic.Int64
		guardedWorker(t, s, &drops, natstool.VerifiedContext(verifier))
		attacker := connect(t, s)
		out := rawCall(t, attacker, &nats.Msg{Subject: dropSubject, Data: []byte(`{"table":"users"}`), Header: forged})
		if drops.Load() != 0 || !strings.Contains(out, "principal claim refused") || !strings.Contains(out, "denied") {
			t.Fatalf("forged call: %d runs, result %s", drops.Load(), out)
		}

		// Callers with the key: an admin's call runs, bob's is denied.
		signer, err := policy.NewHeaderSigner(testSignerKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		local := tool.NewRegistry(tool.WithLogger(quiet))
		importInto(t, connect(t, s), local, natstool.ImportOptions{CallHeaders: natstool.SignedHeaders(signer)})
		waitFor(t, "the tools", func() bool { _, ok := local.Get("drop"); return ok })
		bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
		if res := local.Execute(bob, "drop", json.RawMessage(`{"table":"a"}`)); res.Kind != tool.KindDenied || drops.Load() != 0 {
			t.Fatalf("bob's call: %+v, %d runs", res, drops.Load())
		}
		if res := local.Execute(bob, "echo", json.RawMessage(`{"table":"hi"}`)); res.IsError || res.Output != "hi" {
			t.Fatalf("bob's echo: %+v", res)
		}
		// The attacker captures the admin's signed call on the bus.
		captured, err := attacker.SubscribeSync(dropSubject)
		if err != nil {
			t.Fatal(err)
		}
		attacker.Flush()
		admin := policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}})
		if res := local.Execute(admin, "drop", json.RawMessage(`{"table":"tmp"}`)); res.IsError || drops.Load() != 1 {
			t.Fatalf("admin's call: %+v, %d runs", res, drops.Load())
		}
		m, err := captured.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		captured.Unsubscribe()
		for _, tc := range []struct {
			name string
			msg  *nats.Msg
			want string
		}{
			{"replayed to the attacker's inbox", &nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header}, "does not match"},
			{"other arguments", &nats.Msg{Subject: m.Subject, Data: []byte(`{"table":"users"}`), Header: m.Header}, "does not match"},
			{"moved to another tool", &nats.Msg{Subject: "clawtool.tool.clawtool.echo", Data: m.Data, Header: m.Header}, "does not match"},
			// Whole, listening on the admin's inbox the result goes to.
			{"the same call again", &nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header, Reply: m.Reply}, "already used"},
		} {
			out := rawCall(t, attacker, tc.msg)
			if !strings.Contains(out, tc.want) || drops.Load() != 1 {
				t.Errorf("%s: %d runs, result %s", tc.name, drops.Load(), out)
			}
		}
	})
}

// TestSignedJobs: a job's claim is signed at submit and verified when a
// worker takes it (VerifiedJobContext): alice's signed job runs; a job
// submitted without the key claiming alice (the forgery) is recorded as
// denied and does not run; and a service that verifies calls
// (VerifiedContext) refuses jobs rather than take them for calls.
// SignedHeaders as the queue's Headers keeps each job its submitter's.
func TestSignedJobs(t *testing.T) {
	signer, err := policy.NewHeaderSigner(testSignerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobVerifier, err := policy.NewHeaderSigner(testSignerKey, &policy.HeaderSignerOptions{MaxAge: natstool.DefaultJobTTL, Repeats: true})
	if err != nil {
		t.Fatal(err)
	}
	alice := policy.WithPrincipal(context.Background(), policy.Principal{ID: "alice"})
	args := json.RawMessage(`{"a":40,"b":2}`)
	for _, tc := range []struct {
		name     string
		jobCtx   func(context.Context, nats.Header) (context.Context, error)
		headers  func(context.Context) nats.Header
		wantKind tool.ErrorKind
		want     string
	}{
		{"signed job runs", natstool.VerifiedJobContext(jobVerifier), natstool.SignedHeaders(signer), "", "42"},
		{"unsigned claim refused", natstool.VerifiedJobContext(jobVerifier), func(ctx context.Context) nats.Header { return policy.Headers(ctx) }, tool.KindDenied, "Clawtool-Principal-Signature is missing"},
		{"another key refused", natstool.VerifiedJobContext(jobVerifier), natstool.SignedHeaders(mustSigner(t, []byte("another key, also 32 bytes long!"))), tool.KindDenied, "which this worker does not hold"},
		{"call verifier refuses jobs", nil, natstool.SignedHeaders(signer), tool.KindDenied, "jobs are verified by natstool.VerifiedJobContext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, true)
			var n atomic.Int64
			wnc := connect(t, s)
			serve(t, wnc, aliceOnlyWorker(t, &n), natstool.ServeOptions{CallContext: natstool.VerifiedContext(signer),
				Jobs: openJobs(t, wnc, natstool.JobsOptions{Context: tc.jobCtx})})
			jobs := openJobs(t, connect(t, s), natstool.JobsOptions{Headers: tc.headers})
			id, err := jobs.Submit(alice, "add", args, nil)
			if err != nil {
				t.Fatal(err)
			}
			res := waitJob(t, jobs, alice, id)
			if tc.wantKind == "" {
				if res.IsError || res.Output != tc.want || n.Load() != 1 {
					t.Fatalf("job: %+v, %d runs", res, n.Load())
				}
			} else if res.Kind != tc.wantKind || !strings.Contains(res.Error, tc.want) || n.Load() != 0 {
				t.Fatalf("job: %+v, %d runs; want %s saying %q", res, n.Load(), tc.wantKind, tc.want)
			}
			bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
			if _, err := jobs.Job(bob, id); !errors.Is(err, natstool.ErrJobNotFound) {
				t.Fatalf("bob finds alice's job: %v", err)
			}
		})
	}
}

func mustSigner(t *testing.T, key []byte) *policy.HeaderSigner {
	t.Helper()
	s, err := policy.NewHeaderSigner(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
