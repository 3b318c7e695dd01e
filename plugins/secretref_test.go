package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// TestConfinedServerSecretReference: a secret of the host's environment
// (a variable whose name looks like one) reaches a confined server only
// through an "env" variable its entry names in "secrets". The attack
// renames it: "env": {"DB": "${..._DB_PASSWORD}"} under a harmless name
// whose value (an opaque password, no known token format) the sandbox
// cannot tell from any other, so before the fix the confined server read
// the host's password with no "secrets" consent. The entry now fails
// before it runs, naming the reference, never the value; the control,
// the same entry with "secrets": ["DB"], gets the value, so the route the
// attack used is live.
func TestConfinedServerSecretReference(t *testing.T) {
	requireSandbox(t)
	const password = "opaque-db-password-90210"
	t.Setenv("CLAWTOOL_TEST_DB_PASSWORD", password)
	dir, work, entry := getenvSetup(t)
	startLog := filepath.Join(work, "starts.log")
	b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
		"renamed": entry("renamed_", map[string]any{"DB": "${CLAWTOOL_TEST_DB_PASSWORD}", startLogEnv: startLog}, map[string]any{"workspace": work}),
		"control": entry("control_", map[string]any{"DB": "${CLAWTOOL_TEST_DB_PASSWORD}"}, map[string]any{"secrets": []string{"DB"}}),
	}})
	reg, h := reloadIn(t, dir, b)
	st := map[string]Status{}
	for _, s := range h.Status() {
		st[s.Name] = s
	}
	if res := reg.Execute(t.Context(), "renamed_getenv", json.RawMessage(`{"name": "DB"}`)); !res.IsError && strings.Contains(res.Output, password) {
		t.Errorf("the host's password reached the confined server under another name: %q", res.Output)
	}
	if r := st["renamed"]; r.State != Failed || !strings.Contains(r.Err, "${CLAWTOOL_TEST_DB_PASSWORD}") || !strings.Contains(r.Err, `"secrets"`) || strings.Contains(r.Err, password) {
		t.Errorf("renamed: %+v", r)
	}
	if _, err := os.Stat(startLog); !os.IsNotExist(err) {
		t.Errorf("the refused server ran: its start log: %v", err)
	}
	res := reg.Execute(t.Context(), "control_getenv", json.RawMessage(`{"name": "DB"}`))
	if res.IsError || strings.TrimPrefix(res.Output, "=") != password {
		t.Errorf("control: the consented server does not get the value: %+v %+v", res, st["control"])
	}
}

// TestServerPolicySecretReferences: where a reference to a secret-named
// variable of the host may appear in a confined server's entry. Each
// refused row passed the value to the server before (its argument list,
// its command line, an env variable of another name); each allowed row
// has the entry's consent in "secrets".
func TestServerPolicySecretReferences(t *testing.T) {
	lookup := func(name string) (string, bool) { return "value-of-" + name, true }
	for _, c := range []struct {
		name, entry, want string // want: "" allowed, else a fragment of the error
	}{
		{"env renamed", `{"command": "srv", "env": {"DB": "${DB_PASSWORD}"}}`, `env "DB" expands ${DB_PASSWORD}`},
		{"env renamed, part", `{"command": "srv", "env": {"DSN": "host=db password=${PGPASSWORD}"}}`, `env "DSN" expands ${PGPASSWORD}`},
		{"env renamed, consented", `{"command": "srv", "env": {"DB": "${DB_PASSWORD}"}, "secrets": ["DB"]}`, ""},
		{"env same name, consented", `{"command": "srv", "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "secrets": ["GITHUB_TOKEN"]}`, ""},
		{"env other secret consented", `{"command": "srv", "env": {"A_TOKEN": "${A_TOKEN}", "DB": "${DB_PASSWORD}"}, "secrets": ["A_TOKEN"]}`, `env "DB" expands ${DB_PASSWORD}`},
		{"args", `{"command": "srv", "args": ["--key", "${STRIPE_SECRET_KEY}"]}`, `args[1] expands ${STRIPE_SECRET_KEY}`},
		{"args, consented by its variable", `{"command": "srv", "args": ["--key", "${STRIPE_SECRET_KEY}"], "env": {"STRIPE_SECRET_KEY": "${STRIPE_SECRET_KEY}"}, "secrets": ["STRIPE_SECRET_KEY"]}`, ""},
		{"command", `{"command": "/opt/${API_KEY}/srv"}`, `command expands ${API_KEY}`},
		{"harmless names", `{"command": "${HOME}/srv", "args": ["${LANG}"], "env": {"X": "${USER}"}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(`{"mcpServers": {"s": `+c.entry+`}}`), lookup)
			if err != nil {
				t.Fatal(err)
			}
			_, err = serverPolicy(&sandbox.Policy{}, cfg.Servers["s"], cfg.secretRefs["s"])
			switch {
			case c.want == "" && err != nil && strings.Contains(err.Error(), "expands"):
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			case err != nil && strings.Contains(err.Error(), "value-of-"):
				t.Errorf("the error shows the value: %v", err)
			}
		})
	}
}
