package sandbox

import (
	"context"
	"strings"
	"testing"
)

// TestNotAppliedBounded: what the apply step refuses was listed in
// Result.NotApplied one entry per refused entry with its whole path, and
// the exec tool's text joins them all: a run making thousands of fifos
// (each refused) with paths of kilobytes had the supervisor, outside the
// run's memory limit, hold and copy megabytes for them, past any output
// limit (65,536 fifos under the default budget, 4 KiB paths each: a
// quarter of a gigabyte, copied twice more by Result.Text). The list now
// keeps maxNotApplied entries, each path cut to maxNotAppliedPath bytes,
// and one entry counting the rest; the control is that count, which
// says every fifo was still refused.
func TestNotAppliedBounded(t *testing.T) {
	f := newFixture(t)
	const fifos = 2000
	r := f.sandboxed(t, context.Background(), DefaultNative(), f.policy(), "fifos", "2000")
	if !strings.HasPrefix(string(r.Stdout), "OK") {
		t.Fatalf("the run could not make its fifos: %q %q", r.Stdout, trim(r.Stderr))
	}
	size := 0
	for _, e := range r.NotApplied {
		size += len(e)
	}
	if len(r.NotApplied) > 64+1 || size > (64+1)*(512+200) {
		t.Errorf("NotApplied holds %d entries, %d bytes, for %d refused fifos; want at most %d entries", len(r.NotApplied), size, fifos, 64+1)
	}
	if len(r.NotApplied) == 0 {
		t.Fatal("nothing listed as not applied")
	}
	last := r.NotApplied[len(r.NotApplied)-1]
	want := "and 1936 more"
	if !strings.Contains(last, want) {
		t.Errorf("last entry %q, want it to say %q (every fifo refused: %d listed, the rest counted)", last, want, 64)
	}
	if !strings.Contains(r.NotApplied[0], "fifo") && !strings.Contains(r.NotApplied[0], "not applied") {
		t.Errorf("first entry %q does not say why", r.NotApplied[0])
	}
	if len(r.Text()) > 64<<10 {
		t.Errorf("Result.Text is %d bytes", len(r.Text()))
	}
}
