package plugins

import (
	"strings"
	"testing"
)

// FuzzParse parses arbitrary files with one secret in the environment:
// Parse never panics, and neither an error nor a server's settings as
// Redact shows them contain the secret.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		claudeDesktop,
		`{"mcpServers": {"a": {"command": "x", "env": {"K": "${SECRET}"}, "args": ["${SECRET}"]}}}`,
		`{"mcpServers": {"a": {"url": "http://${SECRET}", "headers": {"H": "pre ${SECRET} post"}}}}`,
		`{"wasmModules": {"m": {"path": "${SECRET}.wasm", "env": {"A": "${SECRET}"}, "tools": [{"name": "t"}]}}}`,
		`{"mcpServers": {"a": {"command": "x", "env": {"K": "${SECRET"}}}}`,
		`{"servers": {"a": {"command": "x"}}, "defaults": {"timeout": 5}}`,
		`[]`, `{`, `{"mcpServers": null}`,
		manyRefs(1000), // TestExpansionBounded, with SECRET unset: an error
		`{"mcpServers": {"a": {"command": "x", "args": [` + strings.TrimSuffix(strings.Repeat(`"${SECRET}${SECRET}",`, 500), ",") + `]}}}`,
	} {
		f.Add(seed)
	}
	const secret = "s3cr3t-f0r-fuzz"
	vars := lookup(map[string]string{"SECRET": secret, "GH_TOKEN": "x", "API_TOKEN": "y"})
	f.Fuzz(func(t *testing.T, data string) {
		c, err := Parse([]byte(data), vars)
		if err != nil {
			if strings.Contains(err.Error(), secret) && strings.Contains(data, "${SECRET}") {
				t.Fatalf("error shows the secret: %v", err)
			}
			return
		}
		for _, s := range c.Servers {
			for _, v := range s.Env {
				if strings.Contains(c.Redact(v), secret) {
					t.Fatalf("Redact(%q) shows the secret", v)
				}
			}
			for _, v := range s.Headers {
				if strings.Contains(c.Redact(v), secret) {
					t.Fatalf("Redact(%q) shows the secret", v)
				}
			}
		}
	})
}
