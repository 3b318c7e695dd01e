package oauth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRedirectsStayOnOrigin: an authorization server's endpoint answers
// with a redirect to another origin. Followed, a 307 re-sends the token
// request's body there (the code and its PKCE verifier, a refresh token,
// a client_secret_post secret) or a registration there, and a 302 takes a
// metadata document from there, whose issuer check then means nothing.
// Each row's control is the same redirect within the authorization
// server's origin, which is followed and works; the attack fails saying
// so, and the other origin gets nothing.
func TestRedirectsStayOnOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		path   string // the endpoint that redirects
		status int
	}{
		{"token request re-sent (307)", "/token", http.StatusTemporaryRedirect},
		{"registration re-sent (308)", "/register", http.StatusPermanentRedirect},
		{"metadata taken (302)", "/.well-known/oauth-authorization-server", http.StatusFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, attack := range []bool{false, true} {
				s := newSetup(t, nil)
				var mu sync.Mutex
				var got []string
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					r.ParseForm()
					mu.Lock()
					got = append(got, r.Method+" "+r.URL.Path+" "+r.PostForm.Encode())
					mu.Unlock()
					// It serves what the honest server would, from another origin.
					s.as.srv.Config.Handler.ServeHTTP(w, r)
				}))
				defer other.Close()
				to := s.as.url()
				if attack {
					to = other.URL
				}
				mux := s.as.srv.Config.Handler.(*http.ServeMux)
				mux.HandleFunc("/bounce"+tc.path, func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, to+tc.path, tc.status)
				})
				if tc.path == "/.well-known/oauth-authorization-server" {
					s.as.onMeta = func(w http.ResponseWriter, r *http.Request) bool {
						if r.Host == strings.TrimPrefix(s.as.url(), "http://") && r.URL.Query().Get("here") == "" {
							http.Redirect(w, r, to+tc.path+"?here=1", tc.status)
							return true
						}
						return false
					}
				} else {
					key := map[string]string{"/token": "token_endpoint", "/register": "registration_endpoint"}[tc.path]
					s.as.meta[key] = s.as.url() + "/bounce" + tc.path
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				err := call(ctx, s.h, s.rs.url())
				cancel()
				mu.Lock()
				reached := append([]string(nil), got...)
				mu.Unlock()
				if !attack {
					if err != nil {
						t.Fatalf("control (a redirect within the origin): %v", err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "another origin") {
					t.Errorf("attack: error %v, want a refusal of the redirect to another origin", err)
				}
				if len(reached) != 0 {
					t.Errorf("the other origin was sent %q", reached)
				}
				if s.rs.okays != 0 {
					t.Errorf("the protected resource served %d requests", s.rs.okays)
				}
				s.noLeak(t, err)
			}
		})
	}
}
