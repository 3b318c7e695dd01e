package toolbox

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadClock(t *testing.T) {
	now := time.Date(2026, 11, 29, 22, 5, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		in   clockArgs
		want ClockReading
	}{
		{
			name: "defaults",
			in:   clockArgs{},
			want: ClockReading{Time: "2026-11-29T22:05:00Z", Zone: "UTC", Abbreviation: "UTC", UTCOffset: "+00:00", Weekday: "Sunday", Unix: 1795989900},
		},
		{
			name: "Paris in winter",
			in:   clockArgs{Zone: "Europe/Paris", Format: FormatRFC3339},
			want: ClockReading{Time: "2026-11-29T23:05:00+01:00", Zone: "Europe/Paris", Abbreviation: "CET", UTCOffset: "+01:00", Weekday: "Sunday", Unix: 1795989900},
		},
		{
			name: "New York in summer, at a given time",
			in:   clockArgs{Zone: "America/New_York", Format: FormatRFC1123, At: "2026-07-04T16:00:00Z"},
			want: ClockReading{Time: "Sat, 04 Jul 2026 12:00:00 EDT", Zone: "America/New_York", Abbreviation: "EDT", UTCOffset: "-04:00", DST: true, Weekday: "Saturday", Unix: 1783180800},
		},
		{
			name: "a half-hour offset and the next day",
			in:   clockArgs{Zone: "Asia/Kolkata", Format: FormatDateTime},
			want: ClockReading{Time: "2026-11-30 03:35:00", Zone: "Asia/Kolkata", Abbreviation: "IST", UTCOffset: "+05:30", Weekday: "Monday", Unix: 1795989900},
		},
		{
			name: "date",
			in:   clockArgs{Zone: "Pacific/Auckland", Format: FormatDate},
			want: ClockReading{Time: "2026-11-30", Zone: "Pacific/Auckland", Abbreviation: "NZDT", UTCOffset: "+13:00", DST: true, Weekday: "Monday", Unix: 1795989900},
		},
		{
			name: "time",
			in:   clockArgs{Zone: "Asia/Tokyo", Format: FormatTime},
			want: ClockReading{Time: "07:05:00", Zone: "Asia/Tokyo", Abbreviation: "JST", UTCOffset: "+09:00", Weekday: "Monday", Unix: 1795989900},
		},
		{
			name: "kitchen",
			in:   clockArgs{Zone: "America/Los_Angeles", Format: FormatKitchen},
			want: ClockReading{Time: "2:05PM", Zone: "America/Los_Angeles", Abbreviation: "PST", UTCOffset: "-08:00", Weekday: "Sunday", Unix: 1795989900},
		},
		{
			name: "unix, with an offset in at",
			in:   clockArgs{Zone: "UTC", Format: FormatUnix, At: "1970-01-01T01:00:00+01:00"},
			want: ClockReading{Time: "0", Zone: "UTC", Abbreviation: "UTC", UTCOffset: "+00:00", Weekday: "Thursday", Unix: 0},
		},
		{
			name: "a fixed-offset zone",
			in:   clockArgs{Zone: "Etc/GMT+5", Format: FormatRFC3339},
			want: ClockReading{Time: "2026-11-29T17:05:00-05:00", Zone: "Etc/GMT+5", Abbreviation: "-05", UTCOffset: "-05:00", Weekday: "Sunday", Unix: 1795989900},
		},
	} {
		got, err := readClock(now, tt.in)
		if err != nil {
			t.Errorf("%s: readClock(%+v) returned error %v", tt.name, tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: readClock(%+v) mismatch (-want +got):\n%s", tt.name, tt.in, diff)
		}
	}
}

func TestReadClockErrors(t *testing.T) {
	now := time.Date(2026, 11, 29, 22, 5, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   clockArgs
		want string
	}{
		{clockArgs{Zone: "Local"}, `zone: "Local" is not offered: name the user's IANA zone, such as Europe/Paris`},
		{clockArgs{Zone: "Mars/Olympus_Mons"}, `zone: unknown time zone "Mars/Olympus_Mons"; use an IANA name such as Europe/Paris, America/New_York or UTC (names are case-sensitive)`},
		{clockArgs{Zone: "europe/paris"}, `zone: unknown time zone "europe/paris"; use an IANA name such as Europe/Paris, America/New_York or UTC (names are case-sensitive)`},
		{clockArgs{Zone: "../../etc/passwd"}, `zone: "../../etc/passwd" is not an IANA zone name; use one such as Europe/Paris, America/New_York or UTC`},
		{clockArgs{Zone: "/etc/localtime"}, `zone: "/etc/localtime" is not an IANA zone name; use one such as Europe/Paris, America/New_York or UTC`},
		{clockArgs{Zone: "Europe/Paris\x00"}, `zone: "Europe/Paris\x00" is not an IANA zone name; use one such as Europe/Paris, America/New_York or UTC`},
		{clockArgs{At: "yesterday"}, `at: "yesterday" is not an RFC 3339 time such as 2026-03-01T12:00:00Z or 2026-03-01T13:00:00+01:00`},
		{clockArgs{At: "2026-03-01 12:00"}, `at: "2026-03-01 12:00" is not an RFC 3339 time such as 2026-03-01T12:00:00Z or 2026-03-01T13:00:00+01:00`},
		{clockArgs{Format: "iso"}, `format: unknown format "iso"`},
	} {
		_, err := readClock(now, tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("readClock(%+v) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}
