package jsontext

import (
	"bytes"
	"net/netip"
	"net/url"
	"strings"
)

// CheckFormat checks s against a JSON Schema format. known reports
// whether the format is one this package asserts: date-time, date, time,
// email, uuid, ipv4, ipv6 and uri. Other formats are annotations only.
// The typed decoder and the generic validator both use it, so they agree.
func CheckFormat(format string, s []byte) (known, ok bool) {
	switch format {
	case "date-time":
		i := bytes.IndexAny(s, "Tt")
		return true, i == 10 && isDate(s[:i]) && isTime(s[i+1:])
	case "date":
		return true, isDate(s)
	case "time":
		return true, isTime(s)
	case "email":
		return true, isEmail(s)
	case "uuid":
		return true, isUUID(s)
	case "ipv4":
		return true, isIPv4(s)
	case "ipv6":
		if bytes.IndexByte(s, ':') < 0 || bytes.IndexByte(s, '%') >= 0 {
			return true, false
		}
		a, err := netip.ParseAddr(string(s))
		return true, err == nil && a.Is6()
	case "uri":
		return true, isURI(s)
	}
	return false, true
}

// KnownFormat reports whether CheckFormat asserts format (date-time,
// date, time, email, uuid, ipv4, ipv6 or uri); any other format is an
// annotation that CheckFormat accepts every value for.
func KnownFormat(format string) bool {
	known, _ := CheckFormat(format, nil)
	return known
}

func digits(s []byte) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

// isDate checks RFC 3339 full-date: YYYY-MM-DD, a real day.
func isDate(s []byte) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, ok1 := digits(s[:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// isTime checks RFC 3339 full-time: HH:MM:SS[.frac](Z|±HH:MM). A leap
// second (:60) is accepted at 23:59 UTC only.
func isTime(s []byte) bool {
	if len(s) < 9 || s[2] != ':' || s[5] != ':' {
		return false
	}
	h, ok1 := digits(s[:2])
	m, ok2 := digits(s[3:5])
	sec, ok3 := digits(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 60 {
		return false
	}
	rest := s[8:]
	if len(rest) > 0 && rest[0] == '.' {
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 1 {
			return false
		}
		rest = rest[j:]
	}
	offMin := 0
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return false
		}
		offMin = oh*60 + om
		if rest[0] == '+' {
			offMin = -offMin
		}
	default:
		return false
	}
	if sec == 60 {
		utc := ((h*60+m+offMin)%1440 + 1440) % 1440
		return utc == 23*60+59
	}
	return true
}

// isEmail is a deliberately simple check: one @, a non-empty local part
// without spaces, and a domain of dot-separated labels (or an IP literal).
func isEmail(s []byte) bool {
	at := bytes.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || len(s) > 320 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 || bytes.ContainsAny(local, " \t\r\n\"(),:;<>[\\]") && local[0] != '"' {
		return false
	}
	if local[0] == '.' || local[len(local)-1] == '.' || bytes.Contains(local, []byte("..")) {
		return false
	}
	if domain[0] == '[' && domain[len(domain)-1] == ']' {
		lit := domain[1 : len(domain)-1]
		if ip, ok := bytes.CutPrefix(lit, []byte("IPv6:")); ok {
			a, err := netip.ParseAddr(string(ip))
			return err == nil && a.Is6()
		}
		return isIPv4(lit)
	}
	return isHostname(domain)
}

func isHostname(s []byte) bool {
	s = bytes.TrimSuffix(s, []byte("."))
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, label := range bytes.Split(s, []byte(".")) {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c >= 0x80) {
				return false
			}
		}
	}
	return true
}

func isUUID(s []byte) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
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

func isIPv4(s []byte) bool {
	parts := bytes.Split(s, []byte("."))
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, ok := digits(p)
		if !ok || len(p) > 3 || n > 255 || len(p) > 1 && p[0] == '0' {
			return false
		}
	}
	return true
}

func isURI(s []byte) bool {
	str := string(s)
	if strings.ContainsAny(str, " \t\r\n<>\"{}|\\^`") {
		return false
	}
	u, err := url.Parse(str)
	return err == nil && u.Scheme != ""
}
