package embedserver

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realModules returns $CLAWTOOL_SENTENCE_ENCODER, failing in CI when it is
// not set and skipping elsewhere.
func realModules(t *testing.T) string {
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

// post sends body to the embeddings path of base with the given headers
// and returns the status and the start of the answer.
func post(t *testing.T, base, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/embeddings", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, string(b)
}

// TestServerRefusesStrangers: the server Start runs answers only the
// Embedder it returns. Any process of any user on the machine could reach
// its loopback port, and a web page could send it a form's POST (a
// "simple" request, which needs no permission from the server): each kept
// the one model busy and filled the 16 places of its queue, so clawtool's
// own searches got 503 and fell back to BM25. A request without the key
// Start gives the server (by its environment, which only its user and
// root may read) is refused 401 before its body is parsed.
func TestServerRefusesStrangers(t *testing.T) {
	s, err := Start(context.Background(), realModules(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Control: the Embedder Start returns is answered.
	if _, err := s.Embedder().Embed(context.Background(), []string{"send a message"}); err != nil {
		t.Fatalf("the server's own Embedder: %v", err)
	}
	const body = `{"model":"universal-sentence-encoder-lite","input":["hello"]}`
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"another process, no key", map[string]string{"Content-Type": "application/json"}},
		{"a wrong key", map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + strings.Repeat("0", 64)}},
		{"a web page's form", map[string]string{"Content-Type": "text/plain"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, got := post(t, s.BaseURL, body, c.header); code != http.StatusUnauthorized {
				t.Errorf("status %d (%s), want 401", code, got)
			}
		})
	}
}

// TestStandaloneServerRefusesPages: run by hand without a key (to share one
// server between commands), the server still refuses what a web page can
// send: a body that is not declared JSON (a form's POST needs no
// permission from the server; one declared JSON does, which it never
// gives) and a request addressed to a host name other than a loopback
// address (a page whose name was made to resolve to 127.0.0.1).
func TestStandaloneServerRefusesPages(t *testing.T) {
	modules := realModules(t)
	path := filepath.Join(t.TempDir(), "server.mjs")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", path, "--listen", "127.0.0.1:0", "--modules", modules, "--stdin-close")
	cmd.Env = withoutKey(os.Environ())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	cmd.Stdout = &firstLine{c: line}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	var base string
	select {
	case l := <-line:
		if base, err = listening(l); err != nil {
			t.Fatal(err)
		}
	case <-time.After(DefaultStartTimeout):
		t.Fatal("the server did not listen")
	}
	const body = `{"input":["hello"]}`
	host := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")
	_, port, _ := strings.Cut(host, ":")
	// Control: a request of this machine's own programs is answered.
	if code, got := post(t, base, body, map[string]string{"Content-Type": "application/json"}); code != http.StatusOK {
		t.Fatalf("control: status %d (%s), want 200", code, got)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"a form's POST", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"no content type", map[string]string{}, http.StatusUnsupportedMediaType},
		{"a rebound host name", map[string]string{"Content-Type": "application/json", "Host": "attacker.example:" + port}, http.StatusMisdirectedRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, got := post(t, base, body, c.header); code != c.want {
				t.Errorf("status %d (%s), want %d", code, got, c.want)
			}
		})
	}
}
