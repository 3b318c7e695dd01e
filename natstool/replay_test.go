package natstool_test

import (
	"context"
	"encoding/json"
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

// TestCrossWorkerReplay: two workers of one service (one queue group)
// verify signed claims with the same key. An admin's signed call of
// "drop" runs on the worker the queue gives it to; an attacker who
// captured it on the bus publishes it again, whole (its reply subject
// too), well within its 2 minutes. To deliver the copy to the *other*
// worker, as the queue group does on a later publish at random, the
// worker that ran the call stops taking calls first, so the copy can
// only go to the other one.
//
// Control: each worker keeps its own nonces (the default), so the other
// worker has never seen the nonce and runs the call a second time.
// Defence: the workers' verifiers share a JetStream bucket of nonces
// (natstool.OpenNonces, each on its own connection, as separate
// processes would): the other worker refuses the copy as already used,
// and the call ran once.
func TestCrossWorkerReplay(t *testing.T) {
	t.Run("shared nonces: the other worker refuses the replay", func(t *testing.T) {
		s := startServer(t, true)
		verifiers := func() *policy.HeaderSigner {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			nonces, err := natstool.OpenNonces(ctx, connect(t, s), nil)
			if err != nil {
				t.Fatal(err)
			}
			v, err := policy.NewHeaderSigner(testSignerKey, &policy.HeaderSignerOptions{Nonces: nonces})
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		runs := replayToTheOtherWorker(t, s, verifiers, "principal claim refused: the signature was already used")
		if runs != 1 {
			t.Fatalf("%d runs of the call, want 1", runs)
		}
	})
	t.Run("control: per-worker nonces run the replay on the other worker", func(t *testing.T) {
		s := startServer(t, false)
		verifiers := func() *policy.HeaderSigner { return mustSigner(t, testSignerKey) }
		runs := replayToTheOtherWorker(t, s, verifiers, "dropped tmp")
		if runs != 2 {
			t.Fatalf("%d runs of the call, want 2 (the replay ran on the other worker)", runs)
		}
	})
}

// replayToTheOtherWorker starts two guarded workers on s, each verifying
// with a signer newVerifier makes, has an admin call "drop" through
// them, captures the call's message, stops the worker that ran it, and
// publishes the captured message again to the other; the replay's
// result must contain want. It returns how many times "drop" ran in all.
func replayToTheOtherWorker(t *testing.T, s *server.Server, newVerifier func() *policy.HeaderSigner, want string) int64 {
	t.Helper()
	var drops [2]atomic.Int64
	var workers [2]*natstool.Service
	for i := range workers {
		workers[i] = guardedWorker(t, s, &drops[i], natstool.VerifiedContext(newVerifier()))
	}
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{CallHeaders: natstool.SignedHeaders(mustSigner(t, testSignerKey))})
	waitFor(t, "the tools", func() bool { _, ok := local.Get("drop"); return ok })

	attacker := connect(t, s)
	captured, err := attacker.SubscribeSync(dropSubject)
	if err != nil {
		t.Fatal(err)
	}
	attacker.Flush()
	admin := policy.WithPrincipal(context.Background(), policy.Principal{ID: "root", Roles: []string{"admin"}})
	if res := local.Execute(admin, "drop", json.RawMessage(`{"table":"tmp"}`)); res.IsError || drops[0].Load()+drops[1].Load() != 1 {
		t.Fatalf("admin's call: %+v, %d+%d runs", res, drops[0].Load(), drops[1].Load())
	}
	m, err := captured.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	captured.Unsubscribe()
	ran := 0
	if drops[1].Load() == 1 {
		ran = 1
	}
	if err := workers[ran].Stop(); err != nil {
		t.Fatal(err)
	}
	out := rawCall(t, attacker, &nats.Msg{Subject: m.Subject, Data: m.Data, Header: m.Header, Reply: m.Reply})
	if !strings.Contains(out, want) {
		t.Errorf("the replay's result %s does not say %q", out, want)
	}
	if other := drops[1-ran].Load(); other > 1 {
		t.Errorf("the other worker ran the call %d times", other)
	}
	return drops[0].Load() + drops[1].Load()
}
