package mcptool

import (
	"fmt"
	"testing"
)

// TestSessionLedgerBounds: a principal's sessions are bounded by
// perCaller, its oldest ended first; anonymous clients, all one caller,
// by the total only; the total ends the oldest of any caller.
func TestSessionLedgerBounds(t *testing.T) {
	l := newSessionLedger(2, 5)
	var ended []string
	add := func(id, key string) {
		for _, e := range l.admit(id, key, func() {}) {
			ended = append(ended, e.id)
		}
	}
	for i := range 3 {
		add(fmt.Sprint("ann", i), `user "ann"`)
	}
	if fmt.Sprint(ended) != "[ann0]" || l.len() != 2 {
		t.Fatalf("ended %v, %d live; want ann0 ended, 2 live", ended, l.len())
	}
	for i := range 3 {
		add(fmt.Sprint("anon", i), anonymousKey)
	}
	if fmt.Sprint(ended) != "[ann0]" || l.len() != 5 {
		t.Fatalf("ended %v, %d live; want 3 anonymous sessions kept beside ann's 2", ended, l.len())
	}
	add("anon3", anonymousKey)
	if fmt.Sprint(ended) != "[ann0 ann1]" || l.len() != 5 {
		t.Fatalf("ended %v, %d live; want the oldest of all (ann1) ended at the total", ended, l.len())
	}
	l.forget("anon0")
	if l.len() != 4 {
		t.Fatalf("%d live after forget, want 4", l.len())
	}
}
