package jsontext

import (
	"net/mail"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// CheckFormat checks s against a JSON Schema format. known reports
// whether the format is one this package asserts: date-time, date, time,
// email, uuid, ipv4, ipv6 and uri. Other formats are annotations only.
// Both the typed decoder and the generic validator use it, so they agree.
func CheckFormat(format, s string) (known, ok bool) {
	switch format {
	case "date-time":
		// The same parser time.Time's UnmarshalText uses.
		var t time.Time
		return true, t.UnmarshalText([]byte(s)) == nil
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return true, err == nil
	case "time":
		_, err := time.Parse("15:04:05.999999999Z07:00", s)
		return true, err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		return true, err == nil && a.Address == s && a.Name == ""
	case "uuid":
		return true, isUUID(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return true, err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return true, err == nil && a.Is6() && a.Zone() == ""
	case "uri":
		u, err := url.Parse(s)
		return true, err == nil && u.Scheme != "" && !strings.ContainsAny(s, " \t\n")
	}
	return false, true
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
