package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// agentSettings are the settings files of coding agents that run
// commands of their own when an agent starts in the directory: Claude
// Code's hooks (SessionStart runs before the user asks anything) and MCP
// servers of Gemini's and Cursor's settings. The default protected list
// named .mcp.json and .claude/commands but none of these.
var agentSettings = []string{".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json", ".cursor/mcp.json"}

// TestAgentSettingsAttack: a run appends a hook to an agent's settings in
// the workspace, which the agent runs as the user the next time it starts
// there. The control, with the protected list as it was (without these
// files), shows the hook reaching the host; with the default list the
// write is refused, through the write budget's overlay and bound directly.
func TestAgentSettingsAttack(t *testing.T) {
	f := newFixture(t)
	before := slices.DeleteFunc(DefaultProtected(), func(p string) bool { return slices.Contains(agentSettings, p) })
	for _, rel := range agentSettings {
		if !slices.Contains(DefaultProtected(), rel) {
			t.Errorf("%s is not in DefaultProtected", rel)
		}
		for _, tc := range []struct {
			name    string
			policy  func(*Policy)
			planted bool
		}{
			{"control: the list without agents' settings", func(p *Policy) { p.Protected = before }, true},
			{"default", func(*Policy) {}, false},
			{"default, workspace bound directly", func(p *Policy) { p.Without = []Layer{LayerWriteBudget} }, false},
		} {
			t.Run(rel+"/"+tc.name, func(t *testing.T) {
				dir := filepath.Join(f.ws, strings.Split(rel, "/")[0])
				must(t, os.RemoveAll(dir))
				must(t, os.MkdirAll(dir, 0o755))
				target := filepath.Join(f.ws, rel)
				must(t, os.WriteFile(target, []byte("{}\n"), 0o644))
				chownAll(t, f.ws)
				p := f.policy()
				tc.policy(&p)
				f.plantAttempt(t, p, "append", target, rel, tc.planted)
			})
		}
	}
}
