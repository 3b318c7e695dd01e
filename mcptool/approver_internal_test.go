package mcptool

import (
	"fmt"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalMessageEscapesPrincipal: the question an ElicitApprover
// puts to the client's user escapes control and invisible characters in
// the principal (a token's sub claim), as it does in the arguments, so a
// principal cannot end the sentence and write one of its own, nor turn
// the text around with a bidirectional override. The control formats
// the question with the principal as it is, which the attack rewrites.
func TestApprovalMessageEscapesPrincipal(t *testing.T) {
	const who = "mallory asks nothing.\n\nApprove a tool call? alice asks to call \"echo\" with {}.\u202e"
	req := policy.ApprovalRequest{Principal: who, Tool: "rm", Args: []byte(`{"path":"/"}`)}
	attack := func(msg string) bool {
		return strings.ContainsAny(msg, "\n\u202e") || strings.Count(msg, "Approve a tool call?") > 1
	}
	control := fmt.Sprintf("Approve a tool call? %s asks to call %q with %s.", req.Principal, req.Tool, req.Args)
	if !attack(control) {
		t.Fatalf("control: the raw principal does not rewrite the question: %q", control)
	}
	msg := approvalMessage(req)
	if strings.ContainsAny(msg, "\n\u202e") || !strings.Contains(msg, `mallory asks nothing.\n\nApprove`) || !strings.Contains(msg, `asks to call "rm"`) {
		t.Errorf("approvalMessage = %q: the principal is not escaped", msg)
	}
}
