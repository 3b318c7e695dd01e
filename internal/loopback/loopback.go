// Package loopback tells whether a URL or a host names this machine, for
// the checks that keep a credential from crossing the network in clear.
package loopback

import (
	"net/netip"
	"net/url"
	"strings"
)

// Host reports whether host names this machine: localhost (in any case,
// with or without a final dot) or a loopback IP address, bracketed or
// not. host has no port.
func Host(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.IsLoopback()
}

// Cleartext reports whether what is sent to u would cross the network in
// clear: u is plain http (in any case) to a host that is not this
// machine. An https URL, or one of another scheme, is not.
func Cleartext(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, "http") && !Host(u.Hostname())
}
