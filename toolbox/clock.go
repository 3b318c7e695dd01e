package toolbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zone data in the binary, so the tool works on machines without it

	"github.com/miniopenclaw/tool"
)

// A TimeFormat names a way of writing a time in the current_time tool.
type TimeFormat string

// The formats of the current_time tool.
const (
	FormatRFC3339  TimeFormat = "rfc3339"  // 2026-11-29T23:05:00+01:00
	FormatRFC1123  TimeFormat = "rfc1123"  // Sun, 29 Nov 2026 23:05:00 CET
	FormatDateTime TimeFormat = "datetime" // 2026-11-29 23:05:00
	FormatDate     TimeFormat = "date"     // 2026-11-29
	FormatTime     TimeFormat = "time"     // 23:05:00
	FormatKitchen  TimeFormat = "kitchen"  // 11:05PM
	FormatUnix     TimeFormat = "unix"     // 1795989900 (seconds since 1970 UTC)
)

// Enum returns every TimeFormat.
func (TimeFormat) Enum() []any {
	return []any{FormatRFC3339, FormatRFC1123, FormatDateTime, FormatDate, FormatTime, FormatKitchen, FormatUnix}
}

var layouts = map[TimeFormat]string{
	FormatRFC3339:  time.RFC3339,
	FormatRFC1123:  time.RFC1123,
	FormatDateTime: time.DateTime,
	FormatDate:     time.DateOnly,
	FormatTime:     time.TimeOnly,
	FormatKitchen:  time.Kitchen,
}

// clockArgs are the arguments of the current_time tool.
type clockArgs struct {
	Zone   string     `json:"zone" default:"UTC" maxLength:"64" pattern:"^[A-Za-z][A-Za-z0-9_+/-]*$" examples:"Europe/Paris,America/New_York,Asia/Tokyo,UTC" description:"An IANA time zone name."`
	Format TimeFormat `json:"format" default:"rfc3339" description:"How to write the time."`
	At     string     `json:"at,omitempty" maxLength:"64" description:"An RFC 3339 time to show in the zone instead of now, such as 2026-03-01T12:00:00Z."`
}

// A ClockReading is the result of the current_time tool.
type ClockReading struct {
	// Time is the time in the zone, in the requested format.
	Time string `json:"time" description:"The time in the zone, in the requested format."`
	// Zone is the IANA name of the zone.
	Zone string `json:"zone" description:"The IANA name of the zone."`
	// Abbreviation is the zone's abbreviation at that time, such as CET
	// or CEST; some zones have only a numeric one, such as +03.
	Abbreviation string `json:"abbreviation" description:"The zone's abbreviation at that time, such as CET."`
	// UTCOffset is the offset from UTC at that time, such as +01:00.
	UTCOffset string `json:"utc_offset" description:"The offset from UTC at that time, such as +01:00."`
	// DST reports whether daylight saving time is in effect.
	DST bool `json:"dst" description:"Whether daylight saving time is in effect."`
	// Weekday is the day of the week in the zone, such as Sunday.
	Weekday string `json:"weekday" description:"The day of the week in the zone."`
	// Unix is the time in seconds since 1970-01-01 UTC.
	Unix int64 `json:"unix" description:"Seconds since 1970-01-01 UTC."`
}

// CurrentTime returns the tool "current_time": the current time, or a
// given time, in an IANA time zone. Its result is a [ClockReading]. Zone
// data is embedded in the binary (time/tzdata), so the tool does not depend
// on the host's; the host's own zone ("Local") is not offered, since it
// says nothing about where the user is.
func CurrentTime() tool.Tool {
	return newClock(time.Now)
}

// newClock returns the current_time tool reading the time from now.
func newClock(now func() time.Time) tool.Tool {
	return tool.Must(tool.New("current_time",
		"Tells the current date and time in an IANA time zone (such as Europe/Paris), or converts a given RFC 3339 time into that zone. "+
			"Also gives the zone's abbreviation, UTC offset, daylight saving time and the weekday.",
		func(ctx context.Context, in clockArgs) (ClockReading, error) {
			if err := ctx.Err(); err != nil {
				return ClockReading{}, err
			}
			return readClock(now(), in)
		},
		tool.WithAnnotations(tool.Annotations{Title: "Current time", ReadOnly: true, Idempotent: true}),
		tool.WithTimeout(5*time.Second), tool.WithInline()))
}

func readClock(now time.Time, in clockArgs) (ClockReading, error) {
	loc, err := loadZone(in.Zone)
	if err != nil {
		return ClockReading{}, err
	}
	t := now
	if in.At != "" {
		if t, err = time.Parse(time.RFC3339, in.At); err != nil {
			return ClockReading{}, fmt.Errorf("at: %q is not an RFC 3339 time such as 2026-03-01T12:00:00Z or 2026-03-01T13:00:00+01:00", shorten(in.At, 64))
		}
	}
	t = t.In(loc)
	format := in.Format
	if format == "" {
		format = FormatRFC3339
	}
	var text string
	switch layout, ok := layouts[format]; {
	case format == FormatUnix:
		text = strconv.FormatInt(t.Unix(), 10)
	case ok:
		text = t.Format(layout)
	default:
		return ClockReading{}, fmt.Errorf("format: unknown format %q", shorten(string(format), 40))
	}
	abbr, _ := t.Zone()
	return ClockReading{
		Time:         text,
		Zone:         loc.String(),
		Abbreviation: abbr,
		UTCOffset:    t.Format("-07:00"),
		DST:          t.IsDST(),
		Weekday:      t.Weekday().String(),
		Unix:         t.Unix(),
	}, nil
}

// loadZone loads an IANA zone by name. time.LoadLocation also accepts
// "Local", which would reveal the host's zone, and reads ZONEINFO files,
// so the name is checked first.
func loadZone(name string) (*time.Location, error) {
	switch {
	case name == "" || name == "UTC":
		return time.UTC, nil
	case name == "Local":
		return nil, fmt.Errorf(`zone: "Local" is not offered: name the user's IANA zone, such as Europe/Paris`)
	case len(name) > 64 || strings.Contains(name, "..") || !zoneChars(name):
		return nil, fmt.Errorf("zone: %q is not an IANA zone name; use one such as Europe/Paris, America/New_York or UTC", shorten(name, 64))
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("zone: unknown time zone %q; use an IANA name such as Europe/Paris, America/New_York or UTC (names are case-sensitive)", name)
	}
	return loc, nil
}

func zoneChars(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-/", c) >= 0) {
			return false
		}
	}
	return name[0] != '/' && name[0] != '-' && name[0] != '+'
}
