package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
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
		{"call_too_many", []string{"call", "calc", "{}", "{}"}, "", exitUsage},
		{"call_stdin_over_cap", []string{"call", "calc", "-"}, `{"expression":"` + strings.Repeat("1", tool.DefaultMaxArgsBytes) + `"}`, exitUsage},
		{"call_flag_after_args", []string{"call", "calc", `{"expression":"6*7"}`, "--mcp-url", "ftp://x"}, "", exitUsage},
		{"call_double_dash", []string{"call", "calc", "--", "--trace"}, "", exitToolError},
		{"schema_flags_after_name", []string{"schema", "calc", "--format", "mcp"}, "", exitOK},
		{"schema_suggests", []string{"schema", "calcc"}, "", exitUsage},
		{"schema_bad_format", []string{"schema", "calc", "--format", "cohere"}, "", exitUsage},
		{"list_json", []string{"list", "--json"}, "", exitOK},
		{"list_policy_viewer", []string{"list", "--policy", "testdata/policy/readonly.cedar", "--as", "vic:viewer"}, "", exitOK},
		{"list_policy_anonymous", []string{"list", "--json", "--policy", "testdata/policy/roles.cedar"}, "", exitOK},
		{"schema_policy_viewer", []string{"schema", "--format", "mcp", "--policy", "testdata/policy/readonly.cedar", "--as", "vic:viewer"}, "", exitOK},
		{"search_policy_viewer", []string{"search", "--policy", "testdata/policy/readonly.cedar", "--as", "vic:viewer", "notes", "key", "value", "time"}, "", exitOK},
		{"schema_policy_hidden", []string{"schema", "--policy", "testdata/policy/readonly.cedar", "--as", "vic:viewer", "kv"}, "", exitUsage},
		{"policy_check_numbers", []string{"policy", "check", "testdata/policy/numbers.cedar"}, "", exitOK},
		{"policy_explain_fraction", []string{"policy", "explain", "--policy", "testdata/policy/numbers.cedar", "convert_units", `{"value":1000.5,"from":"km","to":"m"}`}, "", exitOK},
		{"policy_explain_exponent", []string{"policy", "explain", "--policy", "testdata/policy/numbers.cedar", "convert_units", `{"value":1.5e3,"from":"km","to":"m"}`}, "", exitOK},
		{"policy_explain_failing", []string{"policy", "explain", "--policy", "testdata/policy/failing.cedar", "--as", "ann", "kv", `{"op":"get","key":"a"}`}, "", exitOK},
		{"version_extra_arg", []string{"version", "now"}, "", exitUsage},
		{"help_chat", []string{"help", "chat"}, "", exitOK},
		// Every audit subcommand prints its usage on -h, never opens a
		// file named -h.
		{"audit_help", []string{"audit", "-h"}, "", exitOK},
		{"help_audit", []string{"help", "audit"}, "", exitOK},
		{"audit_verify_help", []string{"audit", "verify", "-h"}, "", exitOK},
		{"audit_verify_help_long", []string{"audit", "verify", "--help"}, "", exitOK},
		{"audit_verify_help_after_file", []string{"audit", "verify", "audit.jsonl", "-h"}, "", exitOK},
		{"audit_no_subcommand", []string{"audit"}, "", exitUsage},
		{"audit_unknown_subcommand", []string{"audit", "check", "audit.jsonl"}, "", exitUsage},
		{"audit_verify_no_file", []string{"audit", "verify"}, "", exitUsage},
		{"audit_verify_two_files", []string{"audit", "verify", "a", "b"}, "", exitUsage},
		{"audit_verify_bad_head", []string{"audit", "verify", "--head", "abc", "audit.jsonl"}, "", exitUsage},
		{"audit_verify_both_heads", []string{"audit", "verify", "--head", "abc", "--head-file", "h", "audit.jsonl"}, "", exitUsage},
		{"policy_help", []string{"policy", "-h"}, "", exitOK},
		{"audit_verify_bad_flag", []string{"audit", "verify", "--tail", "audit.jsonl"}, "", exitUsage},
		{"audit_story_help", []string{"audit", "story", "-h"}, "", exitOK},
		{"audit_story_no_id", []string{"audit", "story", "audit.jsonl"}, "", exitUsage},
		{"audit_story_bad_id", []string{"audit", "story", "testdata/policy/approvals.cedar", "not-an-id"}, "", exitUsage},
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

// Flags may come before, between and after positional arguments, and
// "--" ends the flags.
func TestParseFlags(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		format     string
		json       bool
		positional []string
		code       int
	}{
		{[]string{"calc", "--format", "mcp"}, "mcp", false, []string{"calc"}, -1},
		{[]string{"--format=mcp", "calc", "kv", "-json"}, "mcp", true, []string{"calc", "kv"}, -1},
		{[]string{"calc", "-", "--json"}, "openai", true, []string{"calc", "-"}, -1},
		{[]string{"calc", "--", "--json", "-x"}, "openai", false, []string{"calc", "--json", "-x"}, -1},
		{[]string{"--", "--format"}, "openai", false, []string{"--format"}, -1},
		{[]string{"calc", "--format"}, "openai", false, nil, exitUsage},
		{[]string{"calc", "-h"}, "openai", false, nil, exitOK},
		{nil, "openai", false, []string{}, -1},
	} {
		var stdout, stderr bytes.Buffer
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(&stderr)
		fs.Usage = func() { fmt.Fprintln(fs.Output(), "usage") }
		format := fs.String("format", "openai", "")
		asJSON := fs.Bool("json", false, "")
		code := parseFlags(fs, tt.args, &stdout)
		if code != tt.code {
			t.Errorf("parseFlags(%q) = %d, want %d; stderr: %s", tt.args, code, tt.code, &stderr)
			continue
		}
		switch code {
		case exitOK:
			if stdout.String() != "usage\n" || stderr.Len() != 0 {
				t.Errorf("parseFlags(%q): -h printed %q on stdout and %q on stderr, want the usage on stdout", tt.args, &stdout, &stderr)
			}
			continue
		case exitUsage:
			if !strings.HasPrefix(stderr.String(), "clawtool test: flag needs an argument") || !strings.HasSuffix(stderr.String(), "usage\n") {
				t.Errorf("parseFlags(%q): stderr %q, want what was wrong, then the usage", tt.args, &stderr)
			}
			continue
		}
		if *format != tt.format || *asJSON != tt.json || fmt.Sprint(fs.Args()) != fmt.Sprint(tt.positional) {
			t.Errorf("parseFlags(%q): format %q json %v args %q; want %q %v %q", tt.args, *format, *asJSON, fs.Args(), tt.format, tt.json, tt.positional)
		}
	}
}

func TestVersionText(t *testing.T) {
	for _, tt := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/miniopenclaw/tool", Version: "v1.2.0"}},
			"clawtool v1.2.0 (go1.26.8 linux/amd64)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			"clawtool (devel) commit 0123456789ab, modified (go1.26.8 linux/amd64)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"}, "clawtool (devel) (go1.26.8 linux/amd64)"},
	} {
		if got := versionText(tt.bi, "linux/amd64"); got != tt.want {
			t.Errorf("versionText = %q, want %q", got, tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout.Reset()
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "clawtool ") || !strings.Contains(stdout.String(), "go1.") {
			t.Errorf("clawtool %s: exit %d, stdout %q, stderr %q", args[0], code, &stdout, &stderr)
		}
	}
}

// list --json prints every tool with its whole description and flags.
func TestListJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"list", "--json"}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	var got []listEntry
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	r := tool.NewRegistry()
	if err := registerBuiltins(r); err != nil {
		t.Fatal(err)
	}
	want := r.List()
	if len(got) != len(want) {
		t.Fatalf("%d tools listed, want %d", len(got), len(want))
	}
	for i, w := range want {
		a := tool.OptionsOf(w).Annotations
		if got[i].Name != w.Name() || got[i].Description != w.Description() || got[i].ReadOnly != a.ReadOnly || got[i].Destructive != a.Destructive {
			t.Errorf("entry %d = %+v, want %s", i, got[i], w.Name())
		}
	}
}

func TestReadInput(t *testing.T) {
	for _, tt := range []struct {
		in      string
		limit   int64
		wantErr string
	}{
		{"abcd", 4, ""},
		{"abcde", 4, "more than 4 bytes, the most a test may hold"},
		{strings.Repeat("x", 2<<10+1), 2 << 10, "more than 2 KiB"},
		{strings.Repeat("x", 3<<20+1), 3 << 20, "more than 3 MiB"},
	} {
		b, err := readInput(strings.NewReader(tt.in), tt.limit, "a test")
		if tt.wantErr == "" && (err != nil || string(b) != tt.in) || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("readInput(%d bytes, %d) = %d bytes, %v; want error %q", len(tt.in), tt.limit, len(b), err, tt.wantErr)
		}
	}
}
