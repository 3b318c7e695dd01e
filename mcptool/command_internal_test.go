package mcptool

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestStderrTail checks what the error of a server that ended quotes of
// its standard error: the last 20 lines of its last 4 KiB, each cut to
// 300 bytes, with terminal escapes and invalid UTF-8 made visible rather
// than sent to the user's terminal.
func TestStderrTail(t *testing.T) {
	var many strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	var want []string
	for i := 11; i <= 30; i++ {
		want = append(want, fmt.Sprintf("  line %d", i))
	}
	for _, tt := range []struct {
		name, written, want string
	}{
		{"empty", "\n \n", ""},
		{"last 20 lines", many.String(), strings.Join(want, "\n")},
		{"escapes", "\x1b[31mred\x1b[0m\tand \x9b, \x07 bell, \xff\xfe bytes, \u009b and \uFFFD\r\n", "  \\x1b[31mred\\x1b[0m\tand \\x9b, \\x07 bell, \\xff\\xfe bytes, \\u009b and \uFFFD"},
		{"long line", strings.Repeat("x", 1000), "  " + strings.Repeat("x", 300) + "…"},
		{"only the last 4 KiB", strings.Repeat("y", 5000) + "\nend\n", "  " + strings.Repeat("y", 300) + "…\n  end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb := &tailBuffer{max: stderrTailBytes}
			io.WriteString(tb, tt.written)
			if got := tb.lastLines(stderrTailLines); got != tt.want {
				t.Errorf("lastLines =\n%q\nwant\n%q", got, tt.want)
			}
			if len(tb.b) > stderrTailBytes {
				t.Errorf("the buffer holds %d bytes, over %d", len(tb.b), stderrTailBytes)
			}
		})
	}
	e := &endedError{what: `MCP server "x" exited: exit status 3`, err: io.EOF, tail: "  last words"}
	if got, want := e.Error(), "MCP server \"x\" exited: exit status 3 (EOF); the end of its standard error:\n  last words"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
