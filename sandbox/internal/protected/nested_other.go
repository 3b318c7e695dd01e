//go:build !linux

package protected

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// findRepos lists the directories below ws (relative, slash-separated)
// holding a .git entry, within b; see [Nested].
func findRepos(ws string, b Bounds) ([]string, error) {
	type dir struct {
		rel   string
		depth int
	}
	var repos []string
	queue := []dir{{"", 0}}
	seen := 0
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		f, err := os.Open(filepath.Join(ws, d.rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no workspace (its setup fails), or gone since its parent was read
		}
		if err != nil {
			return nil, err
		}
		hasGit := false
		for {
			ents, err := f.ReadDir(256)
			for _, e := range ents {
				if seen++; seen > b.Entries {
					f.Close()
					return nil, &LimitError{Limit: "entries", Value: b.Entries, Path: orDot(d.rel)}
				}
				if e.Name() == ".git" {
					hasGit = true
					continue
				}
				if !e.IsDir() {
					continue
				}
				if d.depth+1 > b.Depth {
					f.Close()
					return nil, &LimitError{Limit: "depth", Value: b.Depth, Path: path(d.rel, e.Name())}
				}
				queue = append(queue, dir{path(d.rel, e.Name()), d.depth + 1})
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return nil, err
			}
		}
		f.Close()
		if hasGit && d.rel != "" {
			repos = append(repos, d.rel)
		}
	}
	return repos, nil
}
