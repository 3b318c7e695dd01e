package sandbox

import (
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
	"strings"
	"testing"
	"time"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello\n\tworld", "hello\n\tworld"},
		{"ansi colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"nul and bell", "a\x00b\x07", `a\x00b\x07`},
		{"carriage return overwrite", "safe\rEVIL", `safe\rEVIL`},
		{"invalid utf8", "a\xffb", `a\xffb`},
		{"zero width space", "a\u200bb", `a\u200bb`},
		{"line separator", "a\u2028b", `a\u2028b`},
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
		if got := Outcome(outcome.ClassifyFailure([]byte(tt.stderr))); got != tt.want {
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

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name      string
		killed    Outcome
		code, sig int
		cpu, lim  time.Duration
		oom, pids bool
		stderr    string
		want      Outcome
	}{
		{name: "clean exit", want: Exited},
		{name: "failed exit", code: 1, want: Exited},
		{name: "supervisor's kill wins", killed: TimedOut, sig: outcome.SigKILL, cpu: time.Second, lim: time.Second, oom: true, want: TimedOut},
		{name: "OOM before the CPU", sig: outcome.SigKILL, cpu: time.Second, lim: time.Second, oom: true, want: MemoryLimit},
		{name: "kernel kill at the CPU limit", sig: outcome.SigKILL, cpu: time.Second, lim: time.Second, want: CPULimit},
		// rusage is precise, the kernel's check counts ticks: 0.88 s was
		// seen at a 1 s kill on a loaded machine.
		{name: "kernel kill, precise CPU under the limit", sig: outcome.SigKILL, cpu: 880 * time.Millisecond, lim: time.Second, want: CPULimit},
		{name: "SIGXCPU", sig: outcome.SigXCPU, cpu: 1500 * time.Millisecond, lim: 1500 * time.Millisecond, want: CPULimit},
		{name: "limit rounded up like the rlimit", sig: outcome.SigKILL, cpu: 1100 * time.Millisecond, lim: 1500 * time.Millisecond, want: CPULimit},
		{name: "SIGKILL early in the run", sig: outcome.SigKILL, cpu: 300 * time.Millisecond, lim: time.Second, want: Signaled},
		{name: "other signal", sig: 11, cpu: time.Second, lim: time.Second, want: Signaled},
		{name: "fork refused", code: 1, pids: true, want: PIDsLimit},
		{name: "allocation failed", code: 2, stderr: "fatal error: out of memory", want: MemoryLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := classify(c.killed, c.code, c.sig, c.cpu, c.lim, c.oom, c.pids, []byte(c.stderr))
			if got != c.want {
				t.Errorf("classify = %s, want %s", got, c.want)
			}
		})
	}
}
