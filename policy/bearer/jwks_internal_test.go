package bearer

import (
	"net/http"
	"net/url"
	"testing"
)

func TestJWKSClientRedirects(t *testing.T) {
	req := func(u string) *http.Request {
		p, _ := url.Parse(u)
		return &http.Request{URL: p}
	}
	https := []*http.Request{req("https://as.test/jwks")}
	if err := jwksClient.CheckRedirect(req("http://as.test/jwks"), https); err == nil {
		t.Error("followed a redirect from https to http")
	}
	if err := jwksClient.CheckRedirect(req("https://keys.as.test/jwks"), https); err != nil {
		t.Errorf("https to https: %v", err)
	}
	// From http on loopback, a redirect to http elsewhere travels
	// unprotected: refused; to loopback or https it is followed.
	local := []*http.Request{req("http://127.0.0.1:8080/jwks")}
	if err := jwksClient.CheckRedirect(req("http://as.test/jwks"), local); err == nil {
		t.Error("followed a redirect from loopback http to http elsewhere")
	}
	for _, u := range []string{"http://localhost:8081/jwks", "http://[::1]/jwks", "https://as.test/jwks"} {
		if err := jwksClient.CheckRedirect(req(u), local); err != nil {
			t.Errorf("loopback http to %s: %v", u, err)
		}
	}
	five := []*http.Request{req("https://a"), req("https://b"), req("https://c"), req("https://d"), req("https://e")}
	if err := jwksClient.CheckRedirect(req("https://f"), five); err == nil {
		t.Error("followed a sixth redirect")
	}
}
