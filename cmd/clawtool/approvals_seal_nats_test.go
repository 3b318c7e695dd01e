package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestApprovalsListChecksSeals: whoever may write the approvals bucket
// could change what a waiting request shows, for a person to read in
// clawtool approvals list|show, and put the sealed request back before
// the answer (which checks the seal). With --principal-key, list and
// show check each request's seal and say of one that does not verify
// that it may not show the call asked. The control: the request as asked
// reads "verified"; the attack rewrites its arguments in the bucket.
func TestApprovalsListChecksSeals(t *testing.T) {
	tmp := t.TempDir()
	_, url := startNATSServer(t, filepath.Join(tmp, "js"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	key := writePrincipalKey(t)
	secret, err := policy.ReadSignerKeyFile(key)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	store, err := natstool.OpenApprovals(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := policy.New("ask.cedar", []byte(`@effect("ask") permit (principal, action, resource);`),
		policy.WithApprovalStore(store), policy.WithApprovalKey(secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Authorize(policy.WithPrincipal(ctx, policy.Principal{ID: "bob"}), tool.AccessRequest{Name: "rm", Args: json.RawMessage(`{"path":"notes/a"}`)}); err == nil {
		t.Fatal("the call did not ask")
	}
	pending, err := store.Pending(ctx, time.Now())
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %+v, %v", pending, err)
	}
	id := pending[0].ID
	for _, cmd := range [][]string{{"list"}, {"show", id}} {
		if code, out, errOut := runCLI(append([]string{"approvals"}, append(cmd, "--nats", url, "--principal-key", key)...)...); code != exitOK || !strings.Contains(out, "verified") || strings.Contains(out, "NOT VERIFIED") {
			t.Fatalf("control: approvals %s: exit %d\n%s%s", cmd[0], code, out, errOut)
		}
	}
	// The attack: the bucket's record shows other arguments.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "clawtool_approvals")
	if err != nil {
		t.Fatal(err)
	}
	r := pending[0]
	r.Preview, r.Args = `{"path":"notes/old"}`, []byte(`{"path":"notes/old"}`)
	data, _ := json.Marshal(r)
	if _, err := kv.Put(ctx, "r."+id, data); err != nil { // the record's key
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"list"}, {"show", id}} {
		if code, out, errOut := runCLI(append([]string{"approvals"}, append(cmd, "--nats", url, "--principal-key", key)...)...); code != exitOK || !strings.Contains(out, "NOT VERIFIED") || !strings.Contains(out, "does not match") {
			t.Errorf("approvals %s of a rewritten request: exit %d\n%s%s", cmd[0], code, out, errOut)
		}
	}
}
