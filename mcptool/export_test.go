package mcptool

import "net/http"

// ServeHTTPViaSDK serves r through go-sdk's handlers alone, without the
// direct path, so tests can compare the two.
func (s *Server) ServeHTTPViaSDK(w http.ResponseWriter, r *http.Request) {
	newHTTPHandlers(s.sdk, s.cfg.jsonResponse).route(w, r)
}

// WithoutRoundDefences makes s answer 2026-07-28 calls as it did before
// sealed request states and held rounds, for the controls of the attack
// tests.
func WithoutRoundDefences(s *Server) { s.rounds.off = true }

// SDKSessionsHandler returns go-sdk's handler of 2025-11-25 sessions for
// s alone, without this package's bounds, for the controls of the
// attack tests.
func (s *Server) SDKSessionsHandler() http.Handler {
	return newHTTPHandlers(s.sdk, s.cfg.jsonResponse).sessions
}
