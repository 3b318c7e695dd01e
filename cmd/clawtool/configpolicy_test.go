package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeConfigPermissions serves with a configuration file that names
// permissions: calls are decided and audited by them (the allowed call
// makes two records, its decision and its outcome), and an edit of the
// policies takes effect when the configuration file changes.
func TestServeConfigPermissions(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	roles, err := os.ReadFile(filepath.Join("testdata", "policy", "roles.cedar"))
	if err != nil {
		t.Fatal(err)
	}
	perm := filepath.Join(dir, "perm.cedar")
	config := filepath.Join(dir, "config.json")
	audit := filepath.Join(dir, "audit.jsonl")
	write := func(file, text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(perm, string(roles))
	write(config, `{"mcpServers": {}, "permissions": "perm.cedar"}`)

	var stderr lockedBuffer
	s := startServe(t, &stderr, "--config", config, "--as", "bob:analyst", "--audit", audit)
	s.roundTrip(initReq)
	s.send(initialized)
	callCalc := func(id int) string {
		res := s.roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"2*21"}}}`)
		b, _ := json.Marshal(res)
		return string(b)
	}
	if out := callCalc(2); !strings.Contains(out, "42") || strings.Contains(out, "may not") {
		t.Fatalf("analyst call under the configured permissions: %s", out)
	}

	write(perm, "@id(\"closed\")\nforbid (principal, action, resource);\n")
	write(config, `{"mcpServers": {}, "permissions": "perm.cedar", "defaults": {}}`)
	for i := 0; !strings.Contains(stderr.String(), "policies reloaded from "+perm); i++ {
		if i == 400 {
			t.Fatalf("no reload of the permissions reported:\n%s", stderr.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if out := callCalc(3); !strings.Contains(out, "you may not call") {
		t.Errorf("call after the permissions were closed: %s", out)
	}
	if code := s.close(); code != exitOK {
		t.Errorf("serve exit %d: %s", code, stderr.String())
	}
	var stdout, verr bytes.Buffer
	if code := run(context.Background(), []string{"audit", "verify", audit}, strings.NewReader(""), &stdout, &verr); code != exitOK || !strings.Contains(stdout.String(), "ok, 3 records") {
		t.Errorf("audit verify: exit %d: %s%s", code, stdout.String(), verr.String())
	}
}

func TestConfigPermissionsFlags(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {}, "permissions": "missing.cedar"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"call", "--config", config, "calc", `{"expression":"1"}`}, strings.NewReader(""), &stdout, &stderr)
	if code == exitOK || !strings.Contains(stderr.String(), "missing.cedar") {
		t.Errorf("permissions file missing: exit %d, stderr %s, want a refusal naming it", code, stderr.String())
	}
}
