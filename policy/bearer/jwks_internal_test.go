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
	five := []*http.Request{req("http://a"), req("http://b"), req("http://c"), req("http://d"), req("http://e")}
	if err := jwksClient.CheckRedirect(req("http://f"), five); err == nil {
		t.Error("followed a sixth redirect")
	}
}
