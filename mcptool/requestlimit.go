package mcptool

import (
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

// WithRequestLimits bounds the POST requests (calls, listings, listen
// streams, notifications) [Server.ServeHTTP] serves at once: at most
// perCaller of one caller and total in all. Every such request holds a
// goroutine, and a call the tool it runs, until it is answered: without
// a bound, one credential could start as many calls at once as it could
// open connections. A request past a bound is answered at once with 429
// Too Many Requests, Retry-After: 1, and a JSON-RPC error naming the
// bound; nothing of it runs. Zero keeps the default
// ([DefaultMaxRequestsInFlight], [DefaultMaxHTTPRequests]); a negative
// value sets no bound.
func WithRequestLimits(perCaller, total int) ServerOption {
	return func(c *serverConfig) { c.requestsPerCaller, c.requestsTotal = perCaller, total }
}

// A requestGate counts the POST requests being served, per caller and in
// all. It is safe for concurrent use.
type requestGate struct {
	perCaller, total int // <= 0: no bound

	mu    sync.Mutex
	all   int
	byKey map[string]int
}

func newRequestGate(perCaller, total int) *requestGate {
	if perCaller == 0 {
		perCaller = DefaultMaxRequestsInFlight
	}
	if total == 0 {
		total = DefaultMaxHTTPRequests
	}
	return &requestGate{perCaller: perCaller, total: total, byKey: map[string]int{}}
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

// admitRequest counts r against the request bounds if it is a POST, and
// returns the function that forgets it; past a bound it answers r itself
// and returns false.
func (s *Server) admitRequest(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if r.Method != http.MethodPost {
		return func() {}, true
	}
	p, known := policy.PrincipalFrom(r.Context())
	user := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	release, over := s.requests.take(callerKey(p, known, user))
	if over != "" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"mcptool: ` + over + `; send it again when one has been answered"}}`))
		return nil, false
	}
	return release, true
}
