package outcome

import "testing"

func TestCappedSharesBudgetAndFiresOnce(t *testing.T) {
	fired := 0
	b := NewBudget(10)
	b.OnOverflow(func() { fired++ })
	out, errw := b.Stream(), b.Stream()
	for _, w := range []struct {
		c *Stream
		s string
	}{{out, "123456"}, {errw, "abcdef"}, {out, "zzz"}} {
		if n, err := w.c.Write([]byte(w.s)); n != len(w.s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it accepted", w.s, n, err)
		}
	}
	if got := string(out.Bytes()) + "|" + string(errw.Bytes()); got != "123456|abcd" {
		t.Errorf("kept %q, want %q", got, "123456|abcd")
	}
	if fired != 1 || !b.Exceeded() {
		t.Errorf("overflow fired %d times (exceeded=%v), want once", fired, b.Exceeded())
	}
}
