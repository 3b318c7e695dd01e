package jsonduration

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: `"30s"`, want: 30 * time.Second},
		{in: `"1m30s"`, want: 90 * time.Second},
		{in: `1500`, want: 1500 * time.Millisecond},
		{in: `0.5`, want: 500 * time.Microsecond},
		{in: `"soon"`, err: "invalid duration"},
		{in: `true`, err: "a duration is a string"},
		{in: `{}`, err: "a duration is a string"},
	} {
		got, err := Parse([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%s) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%s) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
