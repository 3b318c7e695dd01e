package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/miniopenclaw/tool/internal/golden"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI runs clawtool commands on the built-in tools and compares what
// they print, and their exit status, with golden files in testdata/cli
// (go test -update rewrites them).
func TestCLI(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		stdin string
		code  int
	}{
		{"help", []string{"help"}, "", exitOK},
		{"no_args", nil, "", exitUsage},
		{"unknown_command", []string{"frobnicate"}, "", exitUsage},
		{"list", []string{"list"}, "", exitOK},
		{"list_help", []string{"list", "-h"}, "", exitOK},
		{"list_extra_arg", []string{"list", "x"}, "", exitUsage},
		{"schema_one", []string{"schema", "calc"}, "", exitOK},
		{"schema_unknown", []string{"schema", "nope"}, "", exitUsage},
		{"schema_help", []string{"schema", "-h"}, "", exitOK},
		{"call_ok", []string{"call", "calc", `{"expression":"1+2*3"}`}, "", exitOK},
		{"call_stdin", []string{"call", "convert_units", "-"}, `{"value":100,"from":"C","to":"F"}`, exitOK},
		{"call_invalid", []string{"call", "convert_units", `{"value":"5","from":"km","to":"parsec"}`}, "", exitToolError},
		{"call_tool_error", []string{"call", "calc", `{"expression":"1/0"}`}, "", exitToolError},
		{"call_unknown_tool", []string{"call", "calculator", `{}`}, "", exitToolError},
		{"call_malformed", []string{"call", "calc", `{"expression":`}, "", exitToolError},
		{"call_no_name", []string{"call"}, "", exitUsage},
		{"call_help", []string{"call", "-h"}, "", exitOK},
		{"call_bad_flag", []string{"call", "--nope", "calc"}, "", exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("clawtool %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, &stdout, &stderr)
			}
			got := fmt.Sprintf("$ clawtool %s\n-- exit %d --\n-- stdout --\n%s-- stderr --\n%s", strings.Join(tt.args, " "), code, &stdout, &stderr)
			golden.File(t, filepath.Join("testdata", "cli", tt.name+".golden"), []byte(got))
		})
	}
}
