package mcptool_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// bigCallBody is a 2026-07-28 tools/call of name with the arguments args.
func bigCallBody(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, id, name, args)
}

// postCall posts body as a call of name to url for the caller who (a
// principal the test handler sets), and returns the status and body of
// the answer.
func postCall(ctx context.Context, client *http.Client, url, who, name string, body io.Reader) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	req.Header.Set("X-Test-Caller", who)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// bodyServer serves a registry with a tool "hold", which takes a large
// argument and holds it until release is closed, and a tool "echo", on
// loopback; each request's principal is its X-Test-Caller header.
func bodyServer(t *testing.T, running *atomic.Int64, release chan struct{}, opts ...mcptool.ServerOption) *httptest.Server {
	t.Helper()
	hold, err := tool.New("hold", "holds its argument", func(ctx context.Context, in struct {
		Pad string `json:"pad"`
	}) (string, error) {
		running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fmt.Sprint(len(in.Pad)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	echo, err := tool.New("echo", "says it back", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{hold, echo} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	srv := mcptool.NewServer(reg, opts...)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: r.Header.Get("X-Test-Caller")})))
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestHTTPLargeBodyFlood: one caller sends 24 calls at once over HTTP,
// each with a body of 512 KiB, to a tool that takes its time. The
// request bounds (256 of one caller) let every one of them be held, body
// and all, until its tool returns: within them one caller could hold 256
// bodies of go-sdk's 4 MiB, 1 GiB, and all callers 16 GiB. The server now
// counts the bytes of the bodies it holds, per caller and in all, as it
// reads them, and answers a request whose body would pass a bound with
// 429 and a JSON-RPC error naming it; nothing of it runs, and another
// caller's small call still works. Control:
// without the byte bounds every call is held at once.
func TestHTTPLargeBodyFlood(t *testing.T) {
	const (
		flood = 24
		pad   = 512 << 10
		bound = 4 << 20
	)
	run := func(t *testing.T, want string, limits mcptool.RequestLimits) (held, refused int64) {
		var running atomic.Int64
		release := make(chan struct{})
		hs := bodyServer(t, &running, release, mcptool.WithRequestLimits(limits))
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: flood}}
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		var refusedN atomic.Int64
		var wg sync.WaitGroup
		args := `{"pad":"` + strings.Repeat("x", pad) + `"}`
		for i := range flood {
			wg.Go(func() {
				status, got, err := postCall(ctx, client, hs.URL, "mallory", "hold", strings.NewReader(bigCallBody(i+1, "hold", args)))
				switch {
				case err != nil:
					t.Errorf("call %d: %v", i, err)
				case status == http.StatusTooManyRequests && strings.Contains(got, want):
					refusedN.Add(1)
				case status != http.StatusOK || !strings.Contains(got, fmt.Sprint(pad)):
					t.Errorf("call %d: %d %.200s", i, status, got)
				}
			})
		}
		for running.Load()+refusedN.Load() < flood {
			select {
			case <-ctx.Done():
				t.Fatalf("%d calls held, %d refused, of %d", running.Load(), refusedN.Load(), flood)
			case <-time.After(10 * time.Millisecond):
			}
		}
		held = running.Load()
		// While mallory's calls are held, alice's small call is answered;
		// past the total bound, her large one is refused too.
		status, got, err := postCall(ctx, client, hs.URL, "alice", "echo", strings.NewReader(bigCallBody(1, "echo", `{"s":"hi alice"}`)))
		if err != nil || status != http.StatusOK || !strings.Contains(got, "hi alice") {
			t.Errorf("alice's call while mallory's are held: %d %v %.300s", status, err, got)
		}
		if want == "of all callers" {
			status, got, err := postCall(ctx, client, hs.URL, "alice", "hold", strings.NewReader(bigCallBody(1, "hold", args)))
			if err != nil || status != http.StatusTooManyRequests || !strings.Contains(got, want) {
				t.Errorf("alice's large call past the total bound: %d %v %.300s, want 429 naming the bound", status, err, got)
			}
		}
		close(release)
		wg.Wait()
		return held, refusedN.Load()
	}
	t.Run("control", func(t *testing.T) {
		held, refused := run(t, "bytes of request bodies", mcptool.RequestLimits{BytesPerCaller: -1, BytesTotal: -1})
		t.Logf("control: %d calls of %d KiB held at once, %d refused", held, pad>>10, refused)
		if held != flood {
			t.Fatalf("control: %d calls held at once, want all %d", held, flood)
		}
	})
	for _, tt := range []struct {
		name, want string
		limits     mcptool.RequestLimits
	}{
		{"per caller", "bytes of request bodies of this caller at once", mcptool.RequestLimits{BytesPerCaller: bound}},
		{"in all", "bytes of request bodies of all callers at once", mcptool.RequestLimits{BytesPerCaller: -1, BytesTotal: bound}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if tt.name == "in all" {
				want = "of all callers"
			}
			held, refused := run(t, want, tt.limits)
			t.Logf("%s: %d calls of %d KiB held at once, %d refused", tt.name, held, pad>>10, refused)
			if held*pad > bound || held == 0 || refused != flood-held {
				t.Errorf("%d calls held at once and %d refused, want at most %d held (%d bytes) and the rest refused", held, refused, bound/pad, bound)
			}
		})
	}
}

// TestHTTPBodyLargerThanBound: a body the byte bound cannot hold even
// alone is answered 413 naming the bound (sending it again cannot help),
// whether its length is declared or it comes chunked, and nothing runs;
// a body within it is served.
func TestHTTPBodyLargerThanBound(t *testing.T) {
	const bound = 64 << 10
	var running atomic.Int64
	release := make(chan struct{})
	close(release)
	hs := bodyServer(t, &running, release, mcptool.WithRequestLimits(mcptool.RequestLimits{BytesPerCaller: bound}))
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for _, tt := range []struct {
		name       string
		pad        int
		chunked    bool
		wantStatus int
	}{
		{"within", bound / 2, false, http.StatusOK},
		{"declared", 2 * bound, false, http.StatusRequestEntityTooLarge},
		{"chunked", 2 * bound, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := running.Load()
			var body io.Reader = strings.NewReader(bigCallBody(1, "hold", `{"pad":"`+strings.Repeat("x", tt.pad)+`"}`))
			if tt.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			status, got, err := postCall(ctx, http.DefaultClient, hs.URL, "mallory", "hold", body)
			if err != nil || status != tt.wantStatus {
				t.Fatalf("%d %v %.300s, want %d", status, err, got, tt.wantStatus)
			}
			if ran := running.Load() - before; tt.wantStatus != http.StatusOK && (ran != 0 || !strings.Contains(got, fmt.Sprintf("more than %d bytes", bound))) {
				t.Errorf("%d calls ran; answer %.300s, want none and the bound named", ran, got)
			}
		})
	}
}

// recordingWriter keeps the status and the start of the body of an
// answer.
type recordingWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.body.Len() < 1024 {
		w.body.Write(p[:min(len(p), 1024)])
	}
	return w.ResponseWriter.Write(p)
}

// countingBody counts the bytes the server has read of the bodies being
// served into held, and keeps the peak.
type countingBody struct {
	io.ReadCloser
	held, peak *atomic.Int64
	n          int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	h := b.held.Add(int64(n))
	for m := b.peak.Load(); h > m && !b.peak.CompareAndSwap(m, h); m = b.peak.Load() {
	}
	return n, err
}

// TestHTTPStalledBodiesCounted: one caller starts 12 POSTs of 512 KiB
// each and sends half of every body, then stalls. A body is counted as it
// is read, not once whole: the server refuses the POSTs whose bytes pass
// the caller's bound while their bodies are still coming (429 naming the
// bound), and the bytes it holds stay within it. Control: without the
// byte bounds it reads and holds every half body at once.
func TestHTTPStalledBodiesCounted(t *testing.T) {
	const (
		n     = 12
		half  = 256 << 10
		bound = 1 << 20
	)
	// run returns the bytes of the bodies being read once every POST has
	// been refused or read as far as it was sent, and how many were
	// refused.
	run := func(t *testing.T, limits mcptool.RequestLimits) (peak int64, refused int) {
		var held, top atomic.Int64
		var refusedN atomic.Int64
		reg := tool.NewRegistry()
		srv := mcptool.NewServer(reg, mcptool.WithRequestLimits(limits))
		defer srv.Close()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := &countingBody{ReadCloser: r.Body, held: &held, peak: &top}
			r.Body = body
			defer func() { held.Add(-body.n) }()
			rw := &recordingWriter{ResponseWriter: w}
			srv.ServeHTTP(rw, r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: "mallory"})))
			if rw.code == http.StatusTooManyRequests && strings.Contains(rw.body.String(), "bytes of request bodies of this caller at once") {
				refusedN.Add(1)
			}
		}))
		defer hs.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		var wg sync.WaitGroup
		pipes := make([]*io.PipeWriter, n)
		for i := range n {
			pr, pw := io.Pipe()
			pipes[i] = pw
			go func() {
				pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + strings.Repeat("x", half-80)))
			}()
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, pr)
				req.ContentLength = 2 * half
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				// The refusals are counted by the server's handler: a
				// client whose body is cut short may see the connection
				// reset before it reads the answer.
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		// Every POST is refused, or the server has read its half body.
		for int64(n-refusedN.Load())*(half-80) > held.Load() {
			select {
			case <-ctx.Done():
				t.Fatalf("%d bytes held, %d refused, of %d", held.Load(), refusedN.Load(), n)
			case <-time.After(10 * time.Millisecond):
			}
		}
		peak, refused = held.Load(), int(refusedN.Load())
		for _, pw := range pipes {
			pw.CloseWithError(io.ErrUnexpectedEOF)
		}
		wg.Wait()
		return peak, refused
	}
	t.Run("control", func(t *testing.T) {
		peak, refused := run(t, mcptool.RequestLimits{BytesPerCaller: -1, BytesTotal: -1})
		t.Logf("control: %d bytes of stalled bodies held at once, %d refused", peak, refused)
		if peak < n*(half-80) || refused != 0 {
			t.Fatalf("control: %d bytes held at once and %d refused, want all %d half bodies held", peak, refused, n)
		}
	})
	peak, refused := run(t, mcptool.RequestLimits{BytesPerCaller: bound})
	t.Logf("defended: %d bytes of stalled bodies held at once, %d refused", peak, refused)
	if peak > bound || refused < n-bound/(half-80) {
		t.Errorf("%d bytes held at once and %d refused, want at most %d and the rest refused", peak, refused, bound)
	}
}
