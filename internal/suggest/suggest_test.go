package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"search_flights", "search_hotels", "mode", "from", "to", "Path", "path"}
	for _, tt := range []struct {
		s    string
		n    int
		want []string
	}{
		{"search_flight", 3, []string{"search_flights"}},
		{"Search_Flights", 3, []string{"search_flights"}},
		{"mdoe", 1, []string{"mode"}},
		{"PATH", 3, []string{"Path", "path"}},
		{"rm", 3, nil},                    // too short to guess
		{"fro", 3, []string{"from"}},      // one edit
		{"delete_everything", 3, nil},     // nothing close
		{"from", 3, nil},                  // never the name itself
		{strings.Repeat("x", 65), 3, nil}, // too long to compare
		{"search_hotel", 1, []string{"search_hotels"}},
	} {
		if got := Closest(tt.s, names, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("Closest(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"mode", "mdoe", 1}, {"héllo", "hello", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
