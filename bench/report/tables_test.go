package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTableRunsMeet: the goals are read from the tables of each kept run,
// only the rows of the named server count, and a run with one row over a
// goal is not met.
func TestTableRunsMeet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history", "k")
	table := func(rows ...string) string {
		return "2 CPUs\n\n| sessions | server | calls/s vs peer | p99 vs peer |\n|---|---|---|---|\n" +
			strings.Join(rows, "\n") + "\n\nafter\n"
	}
	mk := func(when, load, out string) *Run {
		r := &Run{Cmd: "bash s.sh", When: when, Load: load, Machine: "m", Out: out}
		if err := keepInHistory(dir, r); err != nil {
			t.Fatal(err)
		}
		r.historyDir = dir
		return r
	}
	mk("2026-12-07 05:00 UTC", "1.0–2.0", table("| 1 | ours | 0.50× | 1.00× |")) // before since
	mk("2026-12-07 06:00 UTC", "8.0–9.0", table("| 1 | ours | 1.06× | 0.95× |", "| 1 | peer | 1.00× | 1.00× |", "| 16 | ours | 1.37× | 0.66× |"))
	last := mk("2026-12-07 06:05 UTC", "10.0–12.0", table("| 1 | ours | 1.13× | 1.14× |", "| 16 | ours | 1.25× | 0.77× |", "| 16 | peer | 0.50× | 9.00× |"))

	got, err := last.TableRunsMeet("server", "ours", "2026-12-07 06:00", "calls/s vs peer>=1.0", "p99 vs peer<=1.0")
	want := "calls/s vs peer 1.13–1.25, p99 vs peer 0.77–1.14 at load 10.0–12.0 (2026-12-07 06:05): not met; " +
		"calls/s vs peer 1.06–1.37, p99 vs peer 0.66–0.95 at load 8.0–9.0 (2026-12-07 06:00): met; met in 1 of 2 runs"
	if err != nil || got != want {
		t.Errorf("TableRunsMeet =\n%q, %v\nwant\n%q", got, err, want)
	}
	for _, tc := range []struct {
		name  string
		key   string
		goals []string
	}{
		{"no such row", "nobody", []string{"p99 vs peer<=1"}},
		{"no such column", "ours", []string{"p50 vs peer<=1"}},
		{"no operator", "ours", []string{"p99 vs peer=1"}},
		{"a limit not a number", "ours", []string{"p99 vs peer<=one"}},
	} {
		if _, err := last.TableRunsMeet("server", tc.key, "2026-12-07 06:00", tc.goals...); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	bad := mk("2026-12-07 06:09 UTC", "1.0–1.0", table("| 1 | ours | fast | 0.9× |"))
	if _, err := bad.TableRunsMeet("server", "ours", "2026-12-07 06:00", "calls/s vs peer>=1"); err == nil {
		t.Error("a cell that is not a number: no error")
	}
}
