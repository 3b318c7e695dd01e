package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// sentenceEncoderEnv names the node_modules directory the packages of
// toolsearch/embedserver were installed into (.ci/sentence-encoder.sh
// prints it; .ci/run sets it).
const sentenceEncoderEnv = "CLAWTOOL_SENTENCE_ENCODER"

// TestSearchSentenceEncoder runs clawtool search --sentence-encoder with
// the real model: a query that shares no word with any tool finds
// convert_units (BM25 alone finds nothing), the tools' vectors are kept
// in the user cache directory and a second search adds none, and the
// server it started is gone when the command returns. Without
// $CLAWTOOL_SENTENCE_ENCODER it is skipped, except in CI (CI=true),
// where it fails.
func TestSearchSentenceEncoder(t *testing.T) {
	modules := sentenceEncoder(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	query := []string{"-n", "3", "-min-confidence", "-1", "how", "many", "kilometres", "is", "a", "mile"}
	search := func(extra ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append(append([]string{"search"}, extra...), query...), nil, &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	if out, _, code := search(); code != exitToolError || strings.Contains(out, "convert_units") {
		t.Fatalf("control: BM25 alone should find nothing: exit %d\n%s", code, out)
	}

	out, errOut, code := search("--sentence-encoder", modules)
	lines := strings.Split(out, "\n")
	if code != exitOK || len(lines) < 2 || !strings.Contains(lines[1], "convert_units") || errOut != "" {
		t.Fatalf("fused: exit %d\nstdout:\n%s\nstderr:\n%s\nwant convert_units first", code, out, errOut)
	}
	if pids := embedServers(t); len(pids) != 0 {
		t.Errorf("the sentence encoder's server still runs after the command returned: pids %v", pids)
	}
	cached := cachedFiles(t, cache)
	if len(cached) < 5 { // the five built-in tools
		t.Fatalf("%d vectors cached, want at least the five tools'", len(cached))
	}

	out2, errOut2, code2 := search("--sentence-encoder", modules)
	if code2 != exitOK || out2 != out || errOut2 != "" {
		t.Errorf("second search: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the first answer", code2, out2, errOut2)
	}
	if again := cachedFiles(t, cache); len(again) != len(cached) {
		t.Errorf("second search cached %d vectors, the first %d: the cache key changed between runs", len(again), len(cached))
	}
}

// TestChatSentenceEncoder runs a chat with --sentence-encoder and the
// real model: the conversation goes as without it, and the server is
// gone when chat returns.
func TestChatSentenceEncoder(t *testing.T) {
	modules := sentenceEncoder(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := httptest.NewServer(answersDone())
	defer srv.Close()
	getenv := localModelEnv(srv.URL)
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := chat(context.Background(), e, []string{"--sentence-encoder", modules, "hello"}, getenv); code != exitOK || stdout.String() != "Done.\n" {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, &stdout, &stderr)
	}
	if pids := embedServers(t); len(pids) != 0 {
		t.Errorf("the sentence encoder's server still runs after chat returned: pids %v", pids)
	}
}

// sentenceEncoder returns $CLAWTOOL_SENTENCE_ENCODER, skipping the test
// when it is not set, except in CI (CI=true), where it fails.
func sentenceEncoder(t *testing.T) string {
	t.Helper()
	modules := os.Getenv(sentenceEncoderEnv)
	if modules == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI must install the sentence encoder (.ci/sentence-encoder.sh)", sentenceEncoderEnv)
		}
		t.Skipf("%s is not set (see .ci/sentence-encoder.sh)", sentenceEncoderEnv)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", sentenceEncoderEnv, err)
	}
	return modules
}

// cachedFiles lists the vectors cached under the cache home dir.
func cachedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.WalkDir(filepath.Join(dir, "clawtool", "embeddings"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// embedServers returns the ids of this process's children that run
// server.mjs (Linux; elsewhere none).
func embedServers(t *testing.T) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("server.mjs")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
