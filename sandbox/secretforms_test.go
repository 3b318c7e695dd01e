package sandbox

import (
	"strings"
	"testing"
)

// TestSecretFormsRound5 holds secrets that passed the environment check
// under names it did not know, in values it did not read: a database
// connection string without a scheme (Go's MySQL form, libpq's and
// ODBC's key=value forms), tokens of well-known formats the list lacked,
// a JSON web token, a webhook URL (whose path is the credential) and
// sshpass's variable. Each is refused unless Policy.Secrets names it
// (the last case); the controls are values that only look close.
func TestSecretFormsRound5(t *testing.T) {
	long := func(prefix string, n int) string { return prefix + strings.Repeat("a1B2", n/4+1)[:n] }
	refused := []struct{ name, kv, why string }{
		{"a MySQL DSN", "DB_DSN=app:hunter2@tcp(db:3306)/app", "credentials"},
		{"a MySQL DSN without a host", "DSN=app:hunter2@/app", "credentials"},
		{"a libpq connection string", "PGCONN=host=db user=app password=hunter2 dbname=app", "a password"},
		{"an ODBC connection string", "CONN=Server=db;Uid=app;Pwd=hunter2;", "a password"},
		{"a password in a query", "DSN=sqlserver://db?user=app&password=hunter2", "a password"},
		{"sshpass's variable", "SSHPASS=hunter2", "SSHPASS"},
		{"a webhook URL", "SLACK_WEBHOOK_URL=https://hooks.example/services/T0/B0/abcdef", "WEBHOOK"},
		{"a Stripe secret key", "BILLING=" + long("sk_live_", 24), "a Stripe key"},
		{"a Stripe restricted key", "BILLING=" + long("rk_live_", 24), "a Stripe key"},
		{"a Hugging Face token", "HUB=" + long("hf_", 34), "a Hugging Face token"},
		{"a Google API key", "MAPS=" + long("AIza", 35), "a Google API key"},
		{"an npm token", "REGISTRY=" + long("npm_", 36), "an npm token"},
		{"a PyPI token", "UPLOAD=" + long("pypi-", 60), "a PyPI token"},
		{"a Vault token", "VAULT=" + long("hvs.", 24), "a Vault token"},
		{"an age secret key", "AGE=" + long("AGE-SECRET-KEY-1", 58), "an age secret key"},
		{"a JSON web token", "SESSION=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijklmnop", "a JSON web token"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := Policy{Env: []string{tc.kv}}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "Policy.Secrets") {
				t.Errorf("Validate(%q) = %v, want it refused as %s, saying how to pass it", tc.kv, err, tc.why)
			}
			name, _, _ := strings.Cut(tc.kv, "=")
			if err := (Policy{Env: []string{tc.kv}, Secrets: []string{name}}).Validate(); err != nil {
				t.Errorf("named in Secrets: %v", err)
			}
		})
	}
	controls := []string{
		"TIME=12:30", "REMOTE=git@git.example:x.git", "MAIL=user@example.org", "HF_HOME=/cache/hf_models",
		"GOFLAGS=-mod=mod", "OPTS=--password-file=/run/x", "QUERY=a=1&b=2", "NOTE=see the npm_ docs",
		"BASE=eyJ", "LABEL=hvs.", "WEBSITE=https://example.org/hooks", "COMPASS=1",
	}
	if err := (Policy{Env: controls}).Validate(); err != nil {
		t.Errorf("controls: %v", err)
	}
}
