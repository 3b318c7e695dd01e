package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigPermissionsUnreadableConfig: the configuration file names
// the permissions every call is decided by; a file that cannot be read
// whole (a server entry referencing an unset variable, malformed JSON, a
// file others may write) cannot tell whether it names any. Before, such
// a file was "left to the plugins host", which refused its entries, and
// the command went on with its built-in tools decided by no permissions
// at all: the forbid-all policy below was skipped and calc ran. Now the
// command refuses to start, naming the file. The control is the same
// configuration, readable, whose forbid-all policy refuses the call.
func TestConfigPermissionsUnreadableConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deny.cedar"), []byte("@id(\"closed\")\nforbid (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, config string
		mode         os.FileMode
	}{
		{"control: readable", `{"mcpServers": {}, "permissions": "deny.cedar"}`, 0o600},
		{"an unset variable", `{"mcpServers": {"x": {"command": "${CLAWTOOL_TEST_UNSET_VARIABLE}"}}, "permissions": "deny.cedar"}`, 0o600},
		{"writable by others", `{"mcpServers": {}, "permissions": "deny.cedar"}`, 0o666},
		{"malformed", `{"mcpServers": {}, "permissions": "deny.cedar",}`, 0o600},
	} {
		t.Run(c.name, func(t *testing.T) {
			config := filepath.Join(dir, "config.json")
			os.Remove(config)
			if err := os.WriteFile(config, []byte(c.config), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(config, c.mode); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"call", "--config", config, "calc", `{"expression":"6*7"}`}, strings.NewReader(""), &stdout, &stderr)
			if code == exitOK || strings.Contains(stdout.String(), "42") {
				t.Errorf("the call ran, decided by no permissions: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), "may not") && !strings.Contains(stderr.String(), "config.json") {
				t.Errorf("neither refused by the permissions nor naming the file: stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

// TestServeConfigPermissionsUnreadableConfig is the same for serve,
// which loads the configuration's entries in the background: with a
// configuration it cannot read, the built-in tools it serves must not
// run undecided.
func TestServeConfigPermissionsUnreadableConfig(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deny.cedar"), []byte("@id(\"closed\")\nforbid (principal, action, resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"x": {"command": "${CLAWTOOL_TEST_UNSET_VARIABLE}"}}, "permissions": "deny.cedar"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	s := startServe(t, &stderr, "--config", config)
	select {
	case code := <-s.done:
		if code == exitOK || !strings.Contains(stderr.String(), "config.json") {
			t.Errorf("serve exit %d, stderr %s: want a refusal naming the file", code, stderr.String())
		}
	case <-time.After(20 * time.Second): // a bound on a hang, not a measurement
		// Before the fix serve ran on: its calc answered 42, decided by
		// no permissions.
		s.roundTrip(initReq)
		s.send(initialized)
		res := s.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"6*7"}}}`)
		b, _ := json.Marshal(res)
		s.close()
		t.Errorf("serve runs with a configuration it cannot read; calc: %s", b)
	}
}
