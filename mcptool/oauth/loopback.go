package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxStrayRedirects bounds the requests a Loopback answers, with a wrong
// state or none, before it gives up waiting.
const maxStrayRedirects = 16

// Loopback is an [Authorizer] for programs on the user's machine (RFC
// 8252 §7.3): it receives the authorization response on a port of
// 127.0.0.1 (never another address) and shows the user the authorization
// URL with Open. It takes the redirect at the path the authorization
// URL's redirect_uri names (its Path, or below it: a [Handler] gives each
// authorization server of a dynamically registered client a path of its
// own). A request to its port that is not the redirect it waits for
// (another path, another state) is answered 400 or 404 and ignored;
// the page it shows comes from nowhere but itself (it never redirects
// and never echoes what it was sent). Close it when done.
type Loopback struct {
	// Port is the port to listen on; 0 picks a free one. A client
	// registered in advance usually needs a fixed one.
	Port int
	// Path is the redirect URI's path; empty means "/callback".
	Path string
	// Open shows the user authURL: opens it in a browser, prints it, or
	// (in tests) fetches it. It may return before the user is done.
	Open func(ctx context.Context, authURL string) error

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	state   string // the state the redirect must carry
	want    string // the path it must come to
	results chan url.Values
	strays  int
}

// RedirectURI implements [Authorizer]: it starts listening, the first
// time, and returns http://127.0.0.1:PORT/callback.
func (l *Loopback) RedirectURI(context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)))
		if err != nil {
			return "", fmt.Errorf("listening for the authorization's redirect: %w", err)
		}
		l.ln = ln
		l.results = make(chan url.Values, 1)
		l.srv = &http.Server{Handler: http.HandlerFunc(l.serve), ReadHeaderTimeout: 10 * time.Second}
		go l.srv.Serve(ln)
	}
	return "http://" + l.ln.Addr().String() + l.path(), nil
}

func (l *Loopback) path() string {
	if l.Path == "" {
		return "/callback"
	}
	return l.Path
}

// Authorize implements [Authorizer].
func (l *Loopback) Authorize(ctx context.Context, authURL string) (url.Values, error) {
	base, err := l.RedirectURI(ctx)
	if err != nil {
		return nil, err
	}
	own, _ := url.Parse(base)
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	if _, err := checkURL("the authorization URL", authURL, false); err != nil {
		return nil, err // never hand a file: or custom-scheme URL to a browser
	}
	// The redirect taken is the one this request names, path and all: a
	// Handler gives each authorization server a path of its own, so an
	// answer sent to another server's path is not taken for this one's.
	want, err := url.Parse(u.Query().Get("redirect_uri"))
	if err != nil || want.Scheme != "http" || want.Host != own.Host ||
		(want.Path != l.path() && !strings.HasPrefix(want.Path, strings.TrimSuffix(l.path(), "/")+"/")) {
		return nil, fmt.Errorf("the authorization URL's redirect_uri %q is not this Loopback's", shortText(u.Query().Get("redirect_uri")))
	}
	l.mu.Lock()
	l.state, l.want, l.strays = u.Query().Get("state"), want.Path, 0
	results := l.results
	for len(results) > 0 { // a response to an earlier request
		<-results
	}
	l.mu.Unlock()
	if l.Open == nil {
		return nil, errors.New("the Loopback has no Open function to show the authorization URL")
	}
	if err := l.Open(ctx, authURL); err != nil {
		return nil, err
	}
	select {
	case q := <-results:
		if q == nil {
			return nil, fmt.Errorf("more than %d requests to the redirect URI that were not the authorization response", maxStrayRedirects)
		}
		return q, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the authorization's redirect: %w", context.Cause(ctx))
	}
}

func (l *Loopback) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	l.mu.Lock()
	want, path := l.state, l.want
	l.mu.Unlock()
	if r.URL.Path != path || r.Method != http.MethodGet {
		http.Error(w, "not found", http.StatusNotFound)
		l.stray()
		return
	}
	q := r.URL.Query()
	if want == "" || q.Get("state") != want {
		http.Error(w, "this is not the authorization response clawtool is waiting for", http.StatusBadRequest)
		l.stray()
		return
	}
	select {
	case l.results <- q:
	default: // one answer per request; the rest are ignored
	}
	l.mu.Lock()
	l.state = "" // a replay of the same response is a stray
	l.mu.Unlock()
	if q.Get("error") != "" {
		io.WriteString(w, "The authorization was refused. You can close this window.\n")
		return
	}
	io.WriteString(w, "Authorization received. You can close this window and return to clawtool.\n")
}

// stray counts a request that was not the response; too many end the wait.
func (l *Loopback) stray() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.strays++
	if l.strays == maxStrayRedirects {
		select {
		case l.results <- nil:
		default:
		}
	}
}

// Close stops listening.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv == nil {
		return nil
	}
	err := l.srv.Close()
	l.srv, l.ln = nil, nil
	return err
}

// OpenBrowser returns an Open function for a [Loopback] that writes the
// authorization URL to w, for the user to open, and tries to open it in
// the user's browser too (xdg-open, open or the Windows shell, when
// present; a failure there is not an error, since the URL is printed).
// It refuses a URL that is not https or plain http on a loopback host.
func OpenBrowser(w io.Writer) func(ctx context.Context, authURL string) error {
	return func(ctx context.Context, authURL string) error {
		if _, err := checkURL("the authorization URL", authURL, false); err != nil {
			return err
		}
		fmt.Fprintf(w, "Open this URL in a browser to authorize clawtool:\n\n  %s\n\nWaiting for the authorization...\n", authURL)
		var cmd *exec.Cmd
		switch runtime.GOOS {
		case "darwin":
			cmd = exec.Command("open", authURL)
		case "windows":
			cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", authURL)
		default:
			if p, err := exec.LookPath("xdg-open"); err == nil {
				cmd = exec.Command(p, authURL)
			}
		}
		if cmd != nil && cmd.Start() == nil {
			go cmd.Wait() // reap it; xdg-open returns once the browser has it
		}
		return nil
	}
}
