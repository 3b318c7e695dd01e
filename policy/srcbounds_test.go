package policy_test

import (
	"context"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// deepPolicies are policy texts that nest past what a parser that
// recurses once per level can take: brackets, unary operators, if-chains,
// long operator chains.
func deepPolicies(n int) map[string]string {
	when := func(cond string) string {
		return "permit(principal, action, resource) when { " + cond + " };"
	}
	return map[string]string{
		"parentheses": when(strings.Repeat("(", n) + "true" + strings.Repeat(")", n)),
		"lists":       when("[] == " + strings.Repeat("[", n) + strings.Repeat("]", n)),
		"records":     when("{} == " + strings.Repeat("{a:", n) + "1" + strings.Repeat("}", n)),
		"not":         when(strings.Repeat("!", 2*n) + "true"),
		"minus":       when("1 == " + strings.Repeat("-", 2*n) + "1"),
		"if":          when(strings.Repeat("if true then ", n/4) + "true" + strings.Repeat(" else true", n/4)),
		"and":         when("true" + strings.Repeat(" && true", n/2)),
	}
}

// TestDeepPolicyIsAnError: a policy file of a few megabytes nesting
// brackets or chaining unary operators ("!!!…") made cedar-go's parser
// overflow the Go stack, which ends the process (a fatal error, not a
// panic a caller could recover): `clawtool serve --policy`, a hot reload
// of the file, a plugin configuration's permissions file or `clawtool
// policy check` died on it. The control parses the same text with
// cedar-go alone, in a child process with a smaller stack, and watches it
// die. Now such a text is refused before it is parsed, naming the bound
// (MaxPolicyNesting, MaxPolicyTokens, MaxPolicyBytes) and the line.
func TestDeepPolicyIsAnError(t *testing.T) {
	if form := os.Getenv("CLAWTOOL_DEEP_POLICY_CHILD"); form != "" {
		debug.SetMaxStack(32 << 20)
		_, err := cedar.NewPolicyListFromBytes("deep.cedar", []byte(deepPolicies(1 << 20)[form]))
		t.Logf("parsed: %v", err)
		return
	}
	for _, form := range []string{"parentheses", "not"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeepPolicyIsAnError$", "-test.v")
		cmd.Env = append(os.Environ(), "CLAWTOOL_DEEP_POLICY_CHILD="+form)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "stack overflow") {
			t.Fatalf("control %s: cedar-go parsed the text without overflowing its stack: %v\n%s", form, err, lastLines(string(out)))
		}
	}
	for form, src := range deepPolicies(1 << 18) { // within MaxPolicyBytes
		_, err := policy.New("deep.cedar", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "deep.cedar:1") || !strings.Contains(err.Error(), "MaxPolicy") {
			t.Errorf("%s: New gave %v, want an error naming the bound and the line", form, err)
		}
	}
	if _, err := policy.New("big.cedar", []byte(strings.Repeat("// padding\n", policy.MaxPolicyBytes/10))); err == nil || !strings.Contains(err.Error(), "MaxPolicyBytes") {
		t.Errorf("a text over MaxPolicyBytes: %v, want refused", err)
	}
	// Near misses: as deep as the bounds allow, and a string full of
	// brackets, still load.
	ok := map[string]string{
		"nesting": "permit(principal, action, resource) when { " + strings.Repeat("(", policy.MaxPolicyNesting-2) + "true" + strings.Repeat(")", policy.MaxPolicyNesting-2) + " };",
		"strings": `permit(principal, action, resource) when { "` + strings.Repeat(`(\"[{`, 10_000) + `" == "x" || true };`,
		"comment": "// " + strings.Repeat("((((", 10_000) + "\npermit(principal, action, resource);",
		"many":    strings.Repeat("permit(principal, action, resource) when { true && true };\n", 20_000),
	}
	for what, src := range ok {
		if _, err := policy.New("ok.cedar", []byte(src)); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

func lastLines(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// TestDeepPrincipalAttrsIsAnError: `clawtool policy check
// --principal-attrs` put its text into the Cedar schema the check parses,
// and cedar-go's schema parser recursed per level of "{a: {a: …" until
// the Go stack overflowed, ending the process. The control parses that
// schema with cedar-go alone in a child process and watches it die; Check
// now refuses the text, naming the bound.
func TestDeepPrincipalAttrsIsAnError(t *testing.T) {
	tl := tool.Must(tool.New("t", "a tool", func(context.Context, struct{}) (string, error) { return "", nil }))
	deep := func(n int) string { return strings.Repeat("a: {", n) + "b: Long" + strings.Repeat("}", n) }
	if os.Getenv("CLAWTOOL_DEEP_ATTRS_CHILD") != "" {
		debug.SetMaxStack(32 << 20)
		var s schema.Schema
		err := s.UnmarshalCedar([]byte(policy.Schema(tl, deep(1<<20))))
		t.Logf("parsed: %v", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeepPrincipalAttrsIsAnError$", "-test.v")
	cmd.Env = append(os.Environ(), "CLAWTOOL_DEEP_ATTRS_CHILD=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "stack overflow") {
		t.Fatalf("control: cedar-go parsed the schema without overflowing its stack: %v\n%s", err, lastLines(string(out)))
	}
	src := []byte(`permit(principal, action, resource);`)
	if _, err := policy.Check("p.cedar", src, []tool.Tool{tl}, deep(1<<18)); err == nil || !strings.Contains(err.Error(), "MaxPolicyNesting") {
		t.Errorf("Check with attributes nested 2^18 deep: %v, want refused naming the bound", err)
	}
	if _, err := policy.Check("p.cedar", src, []tool.Tool{tl}, deep(8)); err != nil {
		t.Errorf("Check with attributes nested 8 deep: %v", err)
	}
}
