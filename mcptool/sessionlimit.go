package mcptool

import (
	"container/list"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Bounds of the 2025-11-25 sessions a [Server] keeps over HTTP (see
// [WithSessionLimits]).
const (
	// DefaultMaxSessionsPerCaller bounds the sessions of one caller (one
	// principal); anonymous clients, all one caller, have the total
	// bound only.
	DefaultMaxSessionsPerCaller = 64
	// DefaultMaxSessions bounds the sessions of all callers together.
	DefaultMaxSessions = 10_000
)

// WithSessionLimits bounds the 2025-11-25 sessions [Server.ServeHTTP]
// keeps: at most perCaller of one caller (the key sessions are bound to:
// the principal; anonymous clients, all one caller, have only the total
// bound) and total in all; and, alike, the
// 2026-07-28 subscriptions/listen streams it serves at once, each of
// which lasts until its client goes. A session lives until
// its client ends it (DELETE) or the server closes; a client that
// initializes sessions without ending them would otherwise have the
// server keep each, with its goroutines, for ever. An initialize past a
// bound is served, and the oldest session of that caller (past
// perCaller) or of any caller (past total) is ended: a request on it gets
// 404, and its client starts a new session, as the specification says.
// So one caller's flood ends only its own sessions until total is
// reached. A listen stream past a bound is served, and the oldest stream
// of that caller (or of any caller) ends, as a stream whose client went
// does; its client listens anew. Zero or a negative value keeps the default
// ([DefaultMaxSessionsPerCaller], [DefaultMaxSessions]).
func WithSessionLimits(perCaller, total int) ServerOption {
	return func(c *serverConfig) { c.sessionsPerCaller, c.sessionsTotal = perCaller, total }
}

// A sessionLedger keeps the order the live sessions began in, in all and
// per caller, for the bounds of WithSessionLimits. It is safe for
// concurrent use.
type sessionLedger struct {
	perCaller, total int

	mu    sync.Mutex
	all   list.List             // *sessionEntry, oldest first
	byKey map[string]*list.List // caller key → its *sessionEntry, oldest first
	byID  map[string]*sessionEntry
}

type sessionEntry struct {
	id, key    string
	end        func() // ends the session or stream; called once, by whoever removed the entry
	inAll, inK *list.Element
}

func newSessionLedger(perCaller, total int) *sessionLedger {
	if perCaller <= 0 {
		perCaller = DefaultMaxSessionsPerCaller
	}
	if total <= 0 {
		total = DefaultMaxSessions
	}
	return &sessionLedger{perCaller: perCaller, total: total, byKey: map[string]*list.List{}, byID: map[string]*sessionEntry{}}
}

// admit records session id of caller key, which end ends, and returns
// the sessions the bounds end to make room for it, which it has
// forgotten: the caller calls their end.
func (l *sessionLedger) admit(id, key string, end func()) (ended []*sessionEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byID[id]; ok {
		return nil
	}
	e := &sessionEntry{id: id, key: key, end: end}
	kl := l.byKey[key]
	if kl == nil {
		kl = list.New()
		l.byKey[key] = kl
	}
	// Every anonymous client is one caller: a bound per caller would
	// bound them all together, so they have the total only.
	for key != anonymousKey && kl.Len() >= l.perCaller {
		old := kl.Front().Value.(*sessionEntry)
		l.remove(old)
		ended = append(ended, old)
	}
	for l.all.Len() >= l.total {
		old := l.all.Front().Value.(*sessionEntry)
		l.remove(old)
		ended = append(ended, old)
	}
	if l.byKey[key] == nil { // removed with its last entry
		l.byKey[key] = kl
	}
	e.inAll, e.inK = l.all.PushBack(e), kl.PushBack(e)
	l.byID[id] = e
	return ended
}

// forget removes session id, if it is recorded.
func (l *sessionLedger) forget(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byID[id]; ok {
		l.remove(e)
	}
}

// remove removes e; the caller holds l.mu.
func (l *sessionLedger) remove(e *sessionEntry) {
	delete(l.byID, e.id)
	l.all.Remove(e.inAll)
	if kl := l.byKey[e.key]; kl != nil {
		kl.Remove(e.inK)
		if kl.Len() == 0 {
			delete(l.byKey, e.key)
		}
	}
}

func (l *sessionLedger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byID)
}

// listenSeq numbers the listen streams of all servers, for their ledger.
var listenSeq atomic.Uint64

// bounded returns r as it is to be served when it opens a 2026-07-28
// subscriptions/listen stream: with a context that ends when the bounds
// of WithSessionLimits end the stream, which done forgets, and true. For
// any other request it returns r, false and a done that does nothing. r
// has passed withCaller.
func (s *Server) bounded(r *http.Request) (*http.Request, bool, func()) {
	if !listenRequest(r) {
		return r, false, func() {}
	}
	key := anonymousKey
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		if c, ok := ti.Extra[callerExtra].(*caller); ok {
			key = c.key
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	id := strconv.FormatUint(listenSeq.Add(1), 10)
	for _, old := range s.listens.admit(id, key, cancel) {
		old.end()
	}
	return r.WithContext(ctx), true, func() { s.listens.forget(id); cancel() }
}

// listenRequest reports whether r asks for a subscriptions/listen
// stream: by its Mcp-Method header, which go-sdk requires to match the
// body of a request it serves statelessly, or, without the header, by
// its body's method.
func listenRequest(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get(headerSessionID) != "" {
		return false
	}
	if m := r.Header.Get(headerMethod); m != "" {
		return m == "subscriptions/listen"
	}
	body, ok := readBody(r)
	if !ok {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == "subscriptions/listen"
}

// anonymousKey is the caller key of a request without a principal (see
// callerKey).
const anonymousKey = "anonymous"
