package mcptool

import (
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

func TestLocalName(t *testing.T) {
	tests := []struct{ prefix, remote, want string }{
		{"", "get_sum", "get_sum"},
		{"ev_", "get-sum", "ev_get-sum"},
		{"", "files.read/v2", "files_read_v2_afe91f73"},
		{"fs_", "a.b", "fs_a_b_108bf50c"},
		{"", strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{"", "", "_811c9dc5"},
	}
	for _, tt := range tests {
		if got := localName(tt.prefix, tt.remote); got != tt.want {
			t.Errorf("localName(%q, %q) = %q, want %q", tt.prefix, tt.remote, got, tt.want)
		}
	}
}

// FuzzLocalName checks that any server name maps to a name the registry
// accepts, the same one every time, and that a name already in the set
// is kept as it is.
func FuzzLocalName(f *testing.F) {
	for _, s := range []string{"", "echo", "a.b", "a/b", "ünïcode", strings.Repeat("y", 200), "x\x00y", "\xff"} {
		f.Add("", s)
		f.Add("p_", s)
	}
	f.Fuzz(func(t *testing.T, prefix, remote string) {
		got := localName(prefix, remote)
		if !tool.ValidName(got) {
			t.Fatalf("localName(%q, %q) = %q, outside ^[a-zA-Z0-9_-]{1,64}$", prefix, remote, got)
		}
		if again := localName(prefix, remote); again != got {
			t.Fatalf("localName(%q, %q) is not stable: %q then %q", prefix, remote, got, again)
		}
		if tool.ValidName(prefix+remote) && got != prefix+remote {
			t.Fatalf("localName(%q, %q) = %q, want the name unchanged", prefix, remote, got)
		}
	})
}
