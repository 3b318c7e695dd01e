package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/golden"
)

// TestSearch runs clawtool search on the built-in tools and compares
// what it prints, and its exit status, with golden files in testdata/cli.
func TestSearch(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"search", []string{"search", "what", "time", "is", "it", "in", "Tokyo"}, exitOK},
		{"search_limit", []string{"search", "-n", "1", "convert kilometers to miles"}, exitOK},
		{"search_regexp", []string{"search", "--regexp", "(?i)^c"}, exitOK},
		{"search_bad_regexp", []string{"search", "--regexp", "("}, exitUsage},
		{"search_no_match", []string{"search", "zebra"}, exitToolError},
		{"search_no_query", []string{"search"}, exitUsage},
		{"search_help", []string{"search", "-h"}, exitOK},
		{"search_word_vectors", []string{"search", "--word-vectors", "../../toolsearch/testdata/wordvec/small.wv", "-n", "3", "what", "time", "is", "it", "in", "Tokyo"}, exitOK},
		{"search_word_vectors_bad", []string{"search", "--word-vectors", "testdata/cli/search.golden", "send", "mail"}, exitUsage},
		{"search_word_vectors_missing", []string{"search", "--word-vectors", "testdata/no-such-file.json", "send", "mail"}, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("clawtool %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, &stdout, &stderr)
			}
			got := fmt.Sprintf("$ clawtool %s\n-- exit %d --\n-- stdout --\n%s-- stderr --\n%s", strings.Join(tt.args, " "), code, &stdout, &stderr)
			golden.File(t, filepath.Join("testdata", "cli", tt.name+".golden"), []byte(got))
		})
	}
}

// TestSearchMCP searches the tools of an MCP server added with --mcp.
func TestSearchMCP(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"search", "--mcp", remoteServer(t), "echo", "text", "remotely"}, nil, &out, &errOut)
	lines := strings.Split(out.String(), "\n")
	if code != exitOK || len(lines) < 2 || !strings.Contains(lines[1], "remote_echo") {
		t.Errorf("search --mcp: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
}
