package mcptool

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// DefaultMaxHTTPRequests bounds the POST requests [Server.ServeHTTP]
// serves at once, of all callers together; one caller (one principal)
// has at most [DefaultMaxRequestsInFlight] of them, and anonymous
// clients, all one caller, the total bound only (as sessions do, see
// [WithSessionLimits]).
const DefaultMaxHTTPRequests = 4096

// DefaultMaxHTTPRequestBytes bounds the bytes of request bodies
// [Server.ServeHTTP] holds at once, of all callers together; one caller
// holds at most [DefaultMaxRequestBytesInFlight] (64 MiB) of them, and
// anonymous clients, all one caller, the total bound only. Without it
// the request bounds alone let one caller hold 256 bodies of go-sdk's
// 4 MiB (1 GiB), and all callers 16 GiB.
const DefaultMaxHTTPRequestBytes = 256 << 20

// RequestLimits bounds what [Server.ServeHTTP] serves at once (see
// [WithRequestLimits]). In every field zero keeps the default and a
// negative value sets no bound.
type RequestLimits struct {
	// PerCaller and Total bound the POST requests being served, of one
	// caller and of all ([DefaultMaxRequestsInFlight],
	// [DefaultMaxHTTPRequests]). With both set, the last quarter of
	// Total is kept for callers that hold fewer than PerCaller/16 (the
	// byte bounds alike), so a few callers at their own bound cannot
	// deny every other one; anonymous clients have the total only.
	PerCaller, Total int
	// BytesPerCaller and BytesTotal bound the bytes of the bodies of
	// those requests ([DefaultMaxRequestBytesInFlight],
	// [DefaultMaxHTTPRequestBytes]). A body is counted as it is read
	// (the room for each read before the read), before any of it is
	// handled, and held until its request has been answered; a body
	// sent without a declared length is refused once it reaches the
	// bound alone.
	BytesPerCaller, BytesTotal int64
}

// WithRequestLimits bounds the POST requests (calls, listings, listen
// streams, notifications) [Server.ServeHTTP] serves at once, and the
// bytes of their bodies, per caller and in all (see [RequestLimits]).
// Every such request holds a goroutine and its body, and a call the tool
// it runs, until it is answered: without a bound, one credential could
// start as many calls at once as it could open connections, or hold as
// many large bodies. A request past a count bound, or whose body would
// take the bytes held past a byte bound while it is read, is answered at
// once with 429 Too Many Requests, Retry-After: 1, and a JSON-RPC error
// naming the bound (413 Content Too Large when its body alone is larger
// than the bound, so that sending it again cannot help); nothing of it
// runs.
func WithRequestLimits(l RequestLimits) ServerOption {
	return func(c *serverConfig) { c.requestLimits = l }
}

// A requestGate counts the POST requests being served, and the bytes of
// their bodies, per caller and in all. It is safe for concurrent use.
type requestGate struct {
	perCaller, total           int   // <= 0: no bound
	bytesPerCaller, bytesTotal int64 // <= 0: no bound
	noShare                    bool  // the last quarter not kept, for the attack test's control

	mu       sync.Mutex
	all      int
	byKey    map[string]int
	allBytes int64
	keyBytes map[string]int64
}

func newRequestGate(l RequestLimits) *requestGate {
	if l.PerCaller == 0 {
		l.PerCaller = DefaultMaxRequestsInFlight
	}
	if l.Total == 0 {
		l.Total = DefaultMaxHTTPRequests
	}
	if l.BytesPerCaller == 0 {
		l.BytesPerCaller = DefaultMaxRequestBytesInFlight
	}
	if l.BytesTotal == 0 {
		l.BytesTotal = DefaultMaxHTTPRequestBytes
	}
	return &requestGate{perCaller: l.PerCaller, total: l.Total, bytesPerCaller: l.BytesPerCaller, bytesTotal: l.BytesTotal,
		byKey: map[string]int{}, keyBytes: map[string]int64{}}
}

// take counts a request of the caller key, and returns the function that
// forgets it, or, past a bound, what was passed.
func (g *requestGate) take(key string) (release func(), over string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.total > 0 && g.all >= g.total:
		return nil, "more than " + strconv.Itoa(g.total) + " requests of all callers at once"
	case key != anonymousKey && g.perCaller > 0 && g.byKey[key] >= g.perCaller:
		return nil, "more than " + strconv.Itoa(g.perCaller) + " requests of this caller at once"
	case g.share(key) && g.all >= g.total-g.total/4 && g.byKey[key] >= max(1, g.perCaller/16):
		return nil, "more than " + strconv.Itoa(g.total-g.total/4) + " requests of all callers at once, the rest kept for callers with fewer than " +
			strconv.Itoa(max(1, g.perCaller/16)) + " (this caller has " + strconv.Itoa(g.byKey[key]) + ")"
	}
	g.all++
	g.byKey[key]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.all--
		if g.byKey[key]--; g.byKey[key] <= 0 {
			delete(g.byKey, key)
		}
	}, ""
}

// share reports whether the last quarter of the total of requests is
// kept from the caller key when it holds a sixteenth of its own bound:
// the first 3/4 of the total go to whoever asks first, the rest only to
// callers holding few, so that a few principals at their own bound
// cannot deny every other one (16 of 256 filled 4,096). Anonymous
// clients, all one caller, have the total only, as before; so does a
// gate without both bounds.
func (g *requestGate) share(key string) bool {
	return !g.noShare && key != anonymousKey && g.perCaller > 0 && g.total > 0
}

// shareBytes is share for the bytes of bodies (4 callers of 64 MiB
// filled 256 MiB).
func (g *requestGate) shareBytes(key string) bool {
	return !g.noShare && key != anonymousKey && g.bytesPerCaller > 0 && g.bytesTotal > 0
}

// largest returns the most bytes one body of the caller key can hold
// with nothing else held, or -1 when no bound applies.
func (g *requestGate) largest(key string) int64 {
	most := int64(-1)
	if g.bytesTotal > 0 {
		most = g.bytesTotal
	}
	if key != anonymousKey && g.bytesPerCaller > 0 && (most < 0 || g.bytesPerCaller < most) {
		most = g.bytesPerCaller
	}
	return most
}

// grow counts n more bytes of a body of the caller key, or, past a
// bound, counts nothing and returns the bound passed.
func (g *requestGate) grow(key string, n int64) (over string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.bytesTotal > 0 && g.allBytes+n > g.bytesTotal:
		return "more than " + strconv.FormatInt(g.bytesTotal, 10) + " bytes of request bodies of all callers at once"
	case key != anonymousKey && g.bytesPerCaller > 0 && g.keyBytes[key]+n > g.bytesPerCaller:
		return "more than " + strconv.FormatInt(g.bytesPerCaller, 10) + " bytes of request bodies of this caller at once"
	case g.shareBytes(key) && g.allBytes+n > g.bytesTotal-g.bytesTotal/4 && g.keyBytes[key]+n > max(1, g.bytesPerCaller/16):
		return "more than " + strconv.FormatInt(g.bytesTotal-g.bytesTotal/4, 10) + " bytes of request bodies of all callers at once, the rest kept for callers with at most " +
			strconv.FormatInt(max(1, g.bytesPerCaller/16), 10)
	}
	g.allBytes += n
	g.keyBytes[key] += n
	return ""
}

// shrink forgets n bytes of a body of the caller key.
func (g *requestGate) shrink(key string, n int64) {
	if n == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allBytes -= n
	if g.keyBytes[key] -= n; g.keyBytes[key] <= 0 {
		delete(g.keyBytes, key)
	}
}

// bodyChunk is how much of a body admitRequest reads, and counts, at a
// time.
const bodyChunk = 32 << 10

// admitRequest counts r against the request bounds if it is a POST,
// reading its body (up to go-sdk's bound, one byte more to let the
// handlers see it is over) and counting its bytes as they arrive, and
// returns r with that body and the function that forgets both; past a
// bound it answers r itself and returns false.
func (s *Server) admitRequest(w http.ResponseWriter, r *http.Request) (_ *http.Request, release func(), ok bool) {
	if r.Method != http.MethodPost {
		return r, func() {}, true
	}
	p, known := policy.PrincipalFrom(r.Context())
	user := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	key := callerKey(p, known, user)
	done, over := s.requests.take(key)
	if over != "" {
		refuseRequest(w, http.StatusTooManyRequests, over+"; send it again when one has been answered")
		return nil, nil, false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return r, done, true
	}
	var held int64
	release = func() {
		s.requests.shrink(key, held)
		done()
	}
	// A body the bytes bound cannot hold even alone is refused with 413
	// (sending it again cannot help), and unread when its length is
	// declared.
	most := s.requests.largest(key)
	// The rest of a body refused is not read: the connection is closed
	// after the answer, which otherwise net/http would send only once it
	// had read (and thrown away) up to 256 KiB more of a body its client
	// may be holding back.
	tooLarge := func() {
		release()
		w.Header().Set("Connection", "close")
		refuseRequest(w, http.StatusRequestEntityTooLarge, "a request body of more than "+strconv.FormatInt(most, 10)+
			" bytes, more than this server holds of one caller at once")
	}
	if most >= 0 && r.ContentLength > most {
		tooLarge()
		return nil, nil, false
	}
	size := bodyChunk
	if r.ContentLength >= 0 && r.ContentLength < bodyChunk {
		size = int(r.ContentLength) + 1
	}
	chunk := make([]byte, size)
	var body []byte
	var err error
	// Each read's room is counted before the read, so that what has
	// been read is never more than what is counted, whatever number of
	// bodies are being read at once; what a read leaves unused is given
	// back.
	for len(body) <= maxPeekBytes {
		want := min(size, maxPeekBytes+1-len(body))
		if r.ContentLength >= 0 {
			if left := r.ContentLength - int64(len(body)); left <= 0 {
				break // the declared length is read: the rest is EOF
			} else if left < int64(want) {
				want = int(left)
			}
		}
		if most >= 0 && held+int64(want) > most {
			// Only a body without a declared length gets here (a longer
			// declared one was refused unread): it is refused once it
			// has as many bytes as the bound.
			if want = int(most - held); want <= 0 {
				tooLarge()
				return nil, nil, false
			}
		}
		if over := s.requests.grow(key, int64(want)); over != "" {
			release()
			w.Header().Set("Connection", "close")
			refuseRequest(w, http.StatusTooManyRequests, over+"; send it again when one has been answered")
			return nil, nil, false
		}
		var n int
		n, err = r.Body.Read(chunk[:want])
		s.requests.shrink(key, int64(want-n))
		held += int64(n)
		body = append(body, chunk[:n]...)
		if err != nil {
			break
		}
	}
	rest := io.Reader(r.Body) // past go-sdk's bound: the handlers refuse it
	if err != nil {
		rest = errReader{err} // at its end, or failed: the handlers see it as they would have
	}
	r2 := *r
	r2.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), r.Body}
	return &r2, release, true
}

// refuseRequest answers a request past a bound with code (and, for 429,
// Retry-After: 1) and a JSON-RPC error naming the bound.
func refuseRequest(w http.ResponseWriter, code int, over string) {
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcptool: ` + over + `"}}`))
}

// errReader fails every read with err (io.EOF: it is at its end).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
