package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
)

// writeKey writes a principal key file, mode 0600, holding data.
func writeKey(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// natsCall runs clawtool call of calc over NATS at url with the extra
// flags, and returns its exit code and output.
func natsCall(url string, flags ...string) (int, string) {
	var stdout, stderr bytes.Buffer
	args := append([]string{"call", "--no-builtins", "--nats", url, "--as", "bob:analyst"}, flags...)
	args = append(args, "calc", `{"expression":"20+22"}`)
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String() + stderr.String()
}

// TestNATSPrincipalKeyRotation: a worker given --principal-key NEW and
// --accept-principal-key OLD decides the calls of callers signing with
// either key, so callers move to the new key one by one without a
// refused call; a key it does not hold is refused. Control: a worker
// with the new key alone refuses the old one. The worker signs its reply
// with the key the call's claim names, when it holds it, so a caller
// still on the old key reads it; a caller whose key the worker does not
// hold cannot authenticate the refusal either, and says so.
func TestNATSPrincipalKeyRotation(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	oldKey := writeKey(t, "old.key", "the old key, at least 32 bytes..")
	newKey := writeKey(t, "new.key", "the new key, at least 32 bytes..")
	otherKey := writeKey(t, "other.key", "nobody's key, at least 32 bytes.")
	rotating, newOnly := startNATS(t), startNATS(t)
	startWorker(t, "--nats", rotating, "--policy", roles, "--principal-key", newKey, "--accept-principal-key", oldKey)
	startWorker(t, "--nats", newOnly, "--policy", roles, "--principal-key", newKey)
	for _, tc := range []struct {
		name, url, key string
		code           int
		want           string
	}{
		{"rotating worker, old key", rotating, oldKey, exitOK, `"output": "42"`},
		{"rotating worker, new key", rotating, newKey, exitOK, `"output": "42"`},
		// The worker's refusal is signed with a key the caller does not
		// hold: the caller cannot authenticate it, and says so.
		{"rotating worker, a key it does not hold", rotating, otherKey, exitToolError, "which this reader does not hold"},
		{"control: new key alone, old key", newOnly, oldKey, exitToolError, "which this reader does not hold"},
		{"new key alone, new key", newOnly, newKey, exitOK, `"output": "42"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := natsCall(tc.url, "--principal-key", tc.key)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

// TestWorkerSharedNonces: two workers of one service given
// --shared-nonces share the nonces of the calls they take, so a signed
// call captured on the bus and published again whole is refused as
// already used whichever of them the queue group gives it to (each of
// several copies; without the flag a copy reaching the other worker
// runs: natstool's TestCrossWorkerReplay). A worker given the flag on a
// server without JetStream does not start.
func TestWorkerSharedNonces(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	key := writePrincipalKey(t)
	s := natstest.Start(t, true)
	url := s.ClientURL()
	for range 2 {
		startWorker(t, "--nats", url, "--policy", roles, "--principal-key", key, "--shared-nonces")
	}
	attacker := natstest.Connect(t, s)
	captured, err := attacker.SubscribeSync("clawtool.tool.clawtool.calc")
	if err != nil {
		t.Fatal(err)
	}
	attacker.Flush()
	if code, out := natsCall(url, "--principal-key", key); code != exitOK || !strings.Contains(out, `"output": "42"`) {
		t.Fatalf("the signed call: exit %d: %s", code, out)
	}
	m, err := captured.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	captured.Unsubscribe()
	results, err := attacker.SubscribeSync(m.Reply)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := attacker.PublishMsg(&nats.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data}); err != nil {
			t.Fatal(err)
		}
		for {
			r, err := results.NextMsg(20 * time.Second)
			if err != nil {
				t.Fatalf("copy %d: no result: %v", i, err)
			}
			if k := r.Header.Get(natstool.HeaderKind); k == "heartbeat" || k == "progress" {
				continue
			}
			if !strings.Contains(string(r.Data), "already used") {
				t.Fatalf("copy %d ran, or was refused for another reason: %s", i, r.Data)
			}
			break
		}
	}

	var stderr bytes.Buffer
	code := run(context.Background(), []string{"worker", "--nats", startNATS(t), "--policy", roles, "--principal-key", key, "--shared-nonces"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitToolError || !strings.Contains(stderr.String(), "--shared-nonces (the server needs JetStream)") {
		t.Fatalf("--shared-nonces without JetStream: exit %d: %s", code, stderr.String())
	}
}
