// Package suggest finds what a mistyped name was probably meant to be, for
// the did-you-mean hints in messages to a model.
package suggest

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on the work of one suggestion: names come from a model or the
// network and may be long or many.
const (
	maxCandidates = 200
	maxLen        = 64
)

// Closest returns up to n candidates close to s, nearest first: those that
// equal s when case is ignored, then those within a small edit distance
// (none for names of 1 or 2 characters, 1 up to 5 characters, else 2).
// It never returns s itself.
func Closest(s string, candidates []string, n int) []string {
	if s == "" || len(s) > maxLen || n <= 0 {
		return nil
	}
	if len(candidates) > maxCandidates {
		candidates = candidates[:maxCandidates]
	}
	limit := 2
	switch k := utf8.RuneCountInString(s); {
	case k <= 2:
		limit = 0
	case k <= 5:
		limit = 1
	}
	type match struct {
		name string
		dist int
	}
	var matches []match
	lower := strings.ToLower(s)
	for _, c := range candidates {
		if c == s || len(c) > maxLen {
			continue
		}
		if strings.EqualFold(c, s) {
			matches = append(matches, match{c, -1})
			continue
		}
		if d := Distance(lower, strings.ToLower(c)); d <= limit {
			matches = append(matches, match{c, d})
		}
	}
	slices.SortStableFunc(matches, func(a, b match) int { return a.dist - b.dist })
	out := make([]string, 0, min(n, len(matches)))
	for _, m := range matches[:min(n, len(matches))] {
		out = append(out, m.name)
	}
	return out
}

// Distance is the optimal string alignment distance between a and b, in
// runes: Levenshtein's, with a swap of neighbours counting as one edit
// ("mdoe" is one edit from "mode").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	w := len(rb) + 1
	d := make([]int, (len(ra)+1)*w)
	for i := 0; i <= len(ra); i++ {
		d[i*w] = i
	}
	for j := 0; j < w; j++ {
		d[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			x := min(d[(i-1)*w+j]+1, d[i*w+j-1]+1, d[(i-1)*w+j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				x = min(x, d[(i-2)*w+j-2]+1)
			}
			d[i*w+j] = x
		}
	}
	return d[len(ra)*w+len(rb)]
}
