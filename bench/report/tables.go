package main

import (
	"fmt"
	"strconv"
	"strings"
)

// tableRows reads the markdown tables of out: for each row whose column
// named keyCol holds key, a map from column name to cell.
func tableRows(out, keyCol, key string) []map[string]string {
	var (
		rows   []map[string]string
		header []string
	)
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
		case strings.Trim(cells[0], "-:") == "":
			// the line under the header
		case len(cells) == len(header):
			row := make(map[string]string, len(cells))
			for i, c := range cells {
				row[header[i]] = c
			}
			if row[keyCol] == key {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// A cond is one goal of a table column: its value at most (or at least)
// limit.
type cond struct {
	col    string
	atMost bool
	limit  float64
}

// parseCond reads "COLUMN<=LIMIT" or "COLUMN>=LIMIT".
func parseCond(s string) (cond, error) {
	for _, op := range []string{"<=", ">="} {
		if col, lim, ok := strings.Cut(s, op); ok {
			l, err := strconv.ParseFloat(lim, 64)
			if err != nil {
				return cond{}, fmt.Errorf("goal %q: %w", s, err)
			}
			return cond{col: col, atMost: op == "<=", limit: l}, nil
		}
	}
	return cond{}, fmt.Errorf("goal %q: want COLUMN<=LIMIT or COLUMN>=LIMIT", s)
}

// cellValue reads a table cell such as "1.06×" or "0.95".
func cellValue(c string) (float64, error) {
	return strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(c), "×"), 64)
}

// TableRunsMeet reads the tables a script printed in every kept run of
// this command made at or after since (UTC, "2006-01-02 15:04"), newest
// first. For the rows whose column keyCol holds key it gives the range of
// each goal's column in each run, with the run's load and time, and
// whether every such row met every goal ("COLUMN<=LIMIT" or
// "COLUMN>=LIMIT"), then how many runs met them all: "…; met in k of n
// runs". A run without such rows, or a goal's column missing or not a
// number, is an error, so a changed table cannot be counted as met.
func (r *Run) TableRunsMeet(keyCol, key, since string, goals ...string) (string, error) {
	conds := make([]cond, len(goals))
	for i, g := range goals {
		c, err := parseCond(g)
		if err != nil {
			return "", err
		}
		conds[i] = c
	}
	runs, err := r.history(since)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(runs))
	met := 0
	for i, h := range runs {
		rows := tableRows(h.Out, keyCol, key)
		if len(rows) == 0 {
			return "", fmt.Errorf("the run of %s: no table row with %s %q", h.When, keyCol, key)
		}
		ok := true
		figs := make([]string, len(conds))
		for j, c := range conds {
			var lo, hi float64
			var loCell, hiCell string
			for k, row := range rows {
				cell, found := row[c.col]
				if !found {
					return "", fmt.Errorf("the run of %s: no column %q", h.When, c.col)
				}
				v, err := cellValue(cell)
				if err != nil {
					return "", fmt.Errorf("the run of %s: column %q: %w", h.When, c.col, err)
				}
				cell = strings.TrimSuffix(strings.TrimSpace(cell), "×")
				if k == 0 || v < lo {
					lo, loCell = v, cell
				}
				if k == 0 || v > hi {
					hi, hiCell = v, cell
				}
				if c.atMost && v > c.limit || !c.atMost && v < c.limit {
					ok = false
				}
			}
			figs[j] = c.col + " " + loCell
			if hi != lo {
				figs[j] += "–" + hiCell
			}
		}
		verdict := "met"
		if ok {
			met++
		} else {
			verdict = "not met"
		}
		parts[i] = fmt.Sprintf("%s at load %s (%s): %s", strings.Join(figs, ", "), h.Load, strings.TrimSuffix(h.When, " UTC"), verdict)
	}
	return fmt.Sprintf("%s; met in %d of %d runs", strings.Join(parts, "; "), met, len(runs)), nil
}
