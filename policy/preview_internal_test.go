package policy

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPreviewShowsEveryArgument: the preview a person approves from
// (clawtool approvals, the --approve prompt, the inspector) was the first
// 512 bytes of the canonical arguments, whose keys are sorted: a
// write_file call with 600 bytes of content showed the content and not
// the path it writes to (".ssh/authorized_keys"), and a padding field
// named "a…" hid every argument after it. The control is that prefix.
// Now every argument's name shows, with each value whole or cut with the
// count of bytes not shown, within MaxApprovalPreview.
func TestPreviewShowsEveryArgument(t *testing.T) {
	canon := func(m map[string]any) []byte {
		b, err := json.Marshal(m) // sorted keys, as the canonical form
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	many := map[string]any{}
	for i := range 200 {
		many["kkk"+string(rune('a'+i%26))+strings.Repeat("z", i/26)] = i
	}
	cases := []struct {
		name string
		args []byte
		want []string // each must show
	}{
		{"write_file", canon(map[string]any{"content": strings.Repeat("ssh-ed25519 AAAA ", 40), "path": ".ssh/authorized_keys"}),
			[]string{`"path":".ssh/authorized_keys"`, `"content":"ssh-ed25519`, "bytes)"}},
		{"padding field", canon(map[string]any{"a_note": strings.Repeat("harmless ", 100), "cmd": "rm -rf ~", "dir": "/"}),
			[]string{`"cmd":"rm -rf ~"`, `"dir":"/"`, `"a_note":"harmless`}},
		{"two long values", canon(map[string]any{"a": strings.Repeat("x", 2000), "b": strings.Repeat("y", 2000), "c": 1}),
			[]string{`"a":"xxx`, `"b":"yyy`, `"c":1`}},
		{"many arguments", canon(many), []string{"more arguments)"}},
		{"long key", canon(map[string]any{strings.Repeat("K", 1000): 1, "z": "shown"}), []string{`"z":"shown"`}},
		{"not an object", []byte(`[` + strings.Repeat(`1,`, 400) + `1]`), []string{"bytes)"}},
	}
	control := string(cases[0].args[:MaxApprovalPreview])
	if strings.Contains(control, "authorized_keys") {
		t.Fatalf("control: the first %d bytes show the path: %s", MaxApprovalPreview, control)
	}
	for _, tc := range cases {
		got := preview(tc.args)
		if len(got) > MaxApprovalPreview {
			t.Errorf("%s: preview of %d bytes, over %d: %s", tc.name, len(got), MaxApprovalPreview, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: preview %s does not show %s", tc.name, got, w)
			}
		}
	}
	// Within the bound whatever the shape: seeded random objects.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		m := map[string]any{}
		for range rng.IntN(40) + 1 {
			k := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(100)+1) + strings.Repeat("é", rng.IntN(5))
			switch rng.IntN(3) {
			case 0:
				m[k] = strings.Repeat("v\u00e9\"", rng.IntN(300))
			case 1:
				m[k] = rng.IntN(1 << 30)
			default:
				m[k] = []any{strings.Repeat("w", rng.IntN(50)), map[string]any{"n": nil}}
			}
		}
		if got := preview(canon(m)); len(got) > MaxApprovalPreview {
			t.Fatalf("preview of %d bytes, over %d: %s", len(got), MaxApprovalPreview, got)
		}
	}
	if got := preview([]byte(`{"op":"delete"}`)); got != `{"op":"delete"}` {
		t.Errorf("a short preview changed: %s", got)
	}
}
