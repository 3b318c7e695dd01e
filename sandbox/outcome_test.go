package sandbox

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello\n\tworld", "hello\n\tworld"},
		{"ansi colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"nul and bell", "a\x00b\x07", `a\x00b\x07`},
		{"carriage return overwrite", "safe\rEVIL", `safe\rEVIL`},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"c1 control", "a\u009bb", `a\u009bb`},
		{"bidi override", "x\u202ey", `x\u202ey`},
		{"unicode kept", "héllo 世界", "héllo 世界"},
		{"delete", "a\x7f", `a\x7f`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize([]byte(tt.in)); got != tt.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCappedSharesBudgetAndFiresOnce(t *testing.T) {
	fired := 0
	b := &outputBudget{left: 10, overflow: func() { fired++ }}
	out, errw := &capped{b: b}, &capped{b: b}
	for _, w := range []struct {
		c *capped
		s string
	}{{out, "123456"}, {errw, "abcdef"}, {out, "zzz"}} {
		if n, err := w.c.Write([]byte(w.s)); n != len(w.s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it accepted", w.s, n, err)
		}
	}
	if got := string(out.bytes()) + "|" + string(errw.bytes()); got != "123456|abcd" {
		t.Errorf("kept %q, want %q", got, "123456|abcd")
	}
	if fired != 1 || !b.exceeded() {
		t.Errorf("overflow fired %d times (exceeded=%v), want once", fired, b.exceeded())
	}
}

func TestClassifyFailure(t *testing.T) {
	tests := []struct {
		stderr string
		want   Outcome
	}{
		{"fatal error: runtime: out of memory", MemoryLimit},
		{"Traceback...\nMemoryError", MemoryLimit},
		{"bash: fork: retry: Resource temporarily unavailable", PIDsLimit},
		{"runtime: failed to create new OS thread (have 5 already; errno=11)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc", PIDsLimit},
		{"ls: cannot access 'x': No such file or directory", Exited},
	}
	for _, tt := range tests {
		if got := classifyFailure([]byte(tt.stderr)); got != tt.want {
			t.Errorf("classifyFailure(%q) = %s, want %s", tt.stderr, got, tt.want)
		}
	}
}

func TestResultText(t *testing.T) {
	r := &Result{Outcome: OutputLimit, ExitCode: -1, Signal: "killed", Stdout: []byte("y\ny\n\x1b[2J"), Stderr: []byte("oops"), Truncated: true}
	got := r.Text()
	for _, want := range []string{"y\ny\n\\x1b[2J", "stderr:\noops\n", "[output cut at the output limit]", "[killed: output limit reached]"} {
		if !strings.Contains(got, want) {
			t.Errorf("Text() = %q, missing %q", got, want)
		}
	}
	if strings.ContainsRune(got, 0x1b) {
		t.Errorf("Text() kept a raw ESC: %q", got)
	}
}
