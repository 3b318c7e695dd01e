package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
)

// TestChatEventsEscapeTerminalControls: what chat prints of each step
// comes from the model and the tools: a tool's result (an imported MCP
// server's, a fetched page's), the name of a tool the model made up, its
// arguments. Printed raw, ESC sequences clear the screen, set the
// window's title or write the clipboard (OSC 52), and U+202E reorders the
// line a person reads. chat prints them escaped, on one line. Control:
// the events hold them raw.
func TestChatEventsEscapeTerminalControls(t *testing.T) {
	const hostile = "ok\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07 \u202egnp.exe\u200b"
	events := []agent.Event{
		{Kind: agent.EventToolCall, Step: 1, Call: tool.Call{Name: "rea\x1b[8md_file", Args: []byte(`{"path":"` + "\u202e" + `txt.exe"}`)}},
		{Kind: agent.EventToolResult, Step: 1, Call: tool.Call{Name: "fetch"}, Outcome: tool.Outcome{Result: tool.Result{Output: hostile}}},
		{Kind: agent.EventToolResult, Step: 1, Call: tool.Call{Name: "fetch"}, Outcome: tool.Outcome{Result: tool.Result{IsError: true, Kind: tool.KindToolError, Error: hostile}}},
		{Kind: agent.EventText, Step: 2, Text: hostile},
	}
	for _, ev := range events {
		var b bytes.Buffer
		printEvent(&b, ev)
		out := b.String()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: %q is not one line", ev.Kind, out)
		}
		if i := strings.IndexFunc(strings.TrimSuffix(out, "\n"), func(r rune) bool {
			return r < 0x20 || r == 0x7f || r == '\u202e' || r == '\u200b'
		}); i >= 0 {
			t.Errorf("%s: printed %q, with a raw control or format character at %d", ev.Kind, out, i)
		}
	}
	if !strings.ContainsRune(hostile, 0x1b) {
		t.Fatal("control: the hostile text holds no ESC")
	}
}

// TestListEscapesDescriptions: an imported server's tool description
// holds an ESC sequence and U+202E; clawtool list and search print its
// first sentence escaped. Control: the description holds them raw.
func TestListEscapesDescriptions(t *testing.T) {
	desc := "Reads\x1b]52;c;cm0gLXJmIH4=\x07 a \u202efile. More."
	if !strings.ContainsRune(desc, 0x1b) {
		t.Fatal("control: no ESC")
	}
	got := summary(desc)
	if strings.IndexFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\u202e' }) >= 0 {
		t.Errorf("summary = %q, with a raw control or format character", got)
	}
	if !strings.HasPrefix(got, `Reads\x1b]52`) {
		t.Errorf("summary = %q, want the description's first sentence, escaped", got)
	}
}
