package mcptool

import "net/http"

// ServeHTTPViaSDK serves r through go-sdk's handlers alone, without the
// direct path, so tests can compare the two.
func (s *Server) ServeHTTPViaSDK(w http.ResponseWriter, r *http.Request) {
	newHTTPHandlers(s.sdk, s.cfg.jsonResponse).route(w, r)
}
