package mcptool

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// canonicalHost returns r with a loopback Host name in its canonical
// form: host names are case-insensitive and may end in a dot, so
// "LOCALHOST:8080" and "localhost.:8080" become "localhost:8080", which
// the DNS-rebinding check (a loopback listener accepts loopback Host
// names only) then recognises. Any other Host is left as it is, and r
// itself when nothing changes.
func canonicalHost(r *http.Request) *http.Request {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, ""
	}
	canon := strings.ToLower(strings.TrimSuffix(host, "."))
	if canon == host || canon != "localhost" && !loopbackIP(canon) {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.Host = canon
	if port != "" {
		r2.Host = net.JoinHostPort(canon, port)
	}
	return r2
}

// loopbackIP reports whether s is a loopback IP address, bracketed or not.
func loopbackIP(s string) bool {
	ip, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil && ip.IsLoopback()
}
