package plugins

import (
	"runtime"
	"strings"
	"testing"
)

// manyRefs is a configuration of one server whose arguments are n
// references to the variable BIG.
func manyRefs(n int) string {
	return `{"mcpServers":{"a":{"command":"x","args":[` + strings.TrimSuffix(strings.Repeat(`"${BIG}",`, n), ",") + `]}}}`
}

// TestExpansionBounded: a configuration file (a project's, say) of 4 MiB
// holds 400,000 references; each expanded to its variable's whole value,
// and each was kept as a secret that Redact replaced in every message, so
// a variable of a kilobyte made 400 MB and every message 400,000 passes.
// The control measures the bytes allocated growing with the references
// times the value; the attack is refused naming the bound, and a value
// referenced many times is one secret.
func TestExpansionBounded(t *testing.T) {
	big := strings.Repeat("v", 1024)
	vars := lookup(map[string]string{"BIG": big})
	parse := func(cfg string) (*Config, error, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c, err := Parse([]byte(cfg), vars)
		runtime.ReadMemStats(&after)
		return c, err, after.TotalAlloc - before.TotalAlloc
	}
	// Control: 2,000 references of 9 bytes expand to 2 MB.
	c, err, small := parse(manyRefs(2000))
	if err != nil {
		t.Fatal(err)
	}
	if small < 2000*1024 {
		t.Fatalf("control: %d references to 1 KB allocated %d bytes", 2000, small)
	}
	if len(c.secrets) != 1 {
		t.Errorf("one value referenced 2,000 times is %d secrets", len(c.secrets))
	}
	attack := manyRefs(400_000)
	if len(attack) > MaxConfigBytes {
		t.Fatalf("the attack is %d bytes, over MaxConfigBytes", len(attack))
	}
	_, err, got := parse(attack)
	if err == nil || !strings.Contains(err.Error(), "expand to more than") {
		t.Fatalf("got %v, want the expansion bound named", err)
	}
	if strings.Contains(err.Error(), big) {
		t.Error("the error shows the value")
	}
	if got > 64<<20 {
		t.Errorf("refusing it allocated %d bytes", got)
	}
}
