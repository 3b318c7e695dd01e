//go:build peers

package plugins

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// BenchmarkConfinedNpxStart starts server-everything through npx (the
// handshake and the first tools/list included, then closed), confined by
// a sandboxPolicy and, interleaved in the same run as the baseline,
// unconfined. It reports the p50 of each and their ratio.
//
//	MCP_PEERS_DIR=$PWD/.ci/mcp-peers go test -tags peers -run '^$' -bench ConfinedNpxStart -benchtime 10x ./plugins/
func BenchmarkConfinedNpxStart(b *testing.B) {
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		b.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh")
	}
	requireSandbox(b)
	dir, _ = filepath.Abs(dir)
	peers := filepath.Join(dir, "peers")
	if _, err := os.Stat(filepath.Join(peers, "node_modules", ".bin", "mcp-server-everything")); err != nil {
		// Never let npx -y fetch it: the figure would time a download.
		b.Fatalf("server-everything is not installed under %s (run .ci/mcp-peers.sh): %v", peers, err)
	}
	policy := filepath.Join(b.TempDir(), "sandbox.json")
	if err := os.WriteFile(policy, []byte(`{"readOnly": [`+jsonString(peers)+`], "limits": {"cpu": "60s"}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	server := Server{
		Command: "npx", Args: []string{"--prefix", peers, "-y", "@modelcontextprotocol/server-everything"},
		Env: map[string]string{"PATH": filepath.Join(peers, "node_modules", ".bin") + ":/usr/local/bin:/usr/bin:/bin"},
	}
	start := func(confined bool) time.Duration {
		c := &Config{Servers: map[string]Server{"everything": server}}
		if confined {
			c.SandboxPolicy = policy
		}
		h := NewHost(tool.NewRegistry())
		t0 := time.Now()
		h.Apply(b.Context(), c)
		d := time.Since(t0)
		if st := h.Status(); len(st) != 1 || st[0].State != Ready {
			b.Fatalf("confined %v: %+v", confined, st)
		}
		h.Close()
		return d
	}
	var conf, plain []time.Duration
	for b.Loop() {
		plain = append(plain, start(false))
		conf = append(conf, start(true))
	}
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	c, p := p50(conf), p50(plain)
	b.ReportMetric(float64(c.Microseconds())/1000, "confined-p50-ms")
	b.ReportMetric(float64(p.Microseconds())/1000, "unconfined-p50-ms")
	b.ReportMetric(float64(c)/float64(p), "confined/unconfined")
}
