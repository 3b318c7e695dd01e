package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// appendTerms splits text into words and appends their terms to dst:
// identifiers are split at underscores, hyphens, dots and camelCase
// boundaries ("listPullRequests", "list_pull_requests" and
// "HTTPServer" give list/pull/request and http/server), letters are
// lowered, common English words are dropped and the rest are stemmed.
// At most max terms are appended.
func appendTerms(dst []string, text string, max int) []string {
	start := -1 // start of the current word
	var prev rune
	flush := func(end int) {
		if start >= 0 {
			if t := term(text[start:end]); t != "" && len(dst) < max {
				dst = append(dst, t)
			}
		}
		start = -1
	}
	for i, r := range text {
		if len(dst) >= max {
			break
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			switch {
			case unicode.IsLower(prev) || unicode.IsDigit(prev):
				flush(i) // fooBar: a word starts at B
			case unicode.IsUpper(prev):
				// HTTPServer: a word starts at S, the last capital
				// before a lower-case letter.
				if next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):]); unicode.IsLower(next) {
					flush(i)
				}
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(text))
	return dst
}

// term returns the index term of one word: lowered and stemmed, or "" for
// a word too common to tell tools apart.
func term(word string) string {
	w := strings.ToLower(word)
	if stopwords[w] && !noStopwords {
		return ""
	}
	if noStemming {
		return w
	}
	return stem(w)
}

// stem strips common English suffixes from a lower-case word so that
// "creates", "creating" and "created" share the term "creat",
// "meetings" and "meeting" share "meet", and "queries" and "query" share
// "query". It is deliberately light: it
// conflates inflections, not derivations.
func stem(w string) string {
	if len(w) <= 3 || !isLetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w = undouble(w[:len(w)-2])
	}
	if strings.HasSuffix(w, "e") && len(w) > 4 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns a doubled final consonant into one: "runn" from
// "running" becomes "run".
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// stopwords are words too common in tool descriptions and queries to tell
// tools apart.
var stopwords = setOf(`a about above after all also an and any are as at be been being but by can could
	do does did for from has have having he her here how i if in into is it its itself just me my no nor not
	of on once only or other our out over own same she should so some such than that the their them then there
	these they this those through to too under until up very was we were what when where which while who whom
	why will with would you your yours please want need like let lets using use used via given e g eg ie etc
	called named some any thing things right now much many really`)

func setOf(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// noStopwords and noStemming turn stop words and stemming off; only
// TestAblation sets them, to measure what each is worth.
var noStopwords, noStemming bool
