// Package dag checks the dependency graph of a batch of tool calls and
// orders it: duplicate and unknown IDs, dependencies on an empty ID, and
// cycles are reported before anything runs.
package dag

import (
	"fmt"
	"strconv"
	"strings"
)

// A Graph is a checked, acyclic dependency graph over nodes 0..n-1.
type Graph struct {
	// Deps[i] lists the nodes i depends on, each once, in the order first
	// named.
	Deps [][]int
	// Dependents[j] lists the nodes that depend on j, in node order.
	Dependents [][]int
}

// Build checks the graph whose node i has ID ids[i] and depends on the
// nodes whose IDs are listed in deps[i] (deps may be shorter than ids).
// Empty IDs are allowed as long as nothing depends on them; repeated
// dependencies count once. Build returns an error naming the problem: a
// duplicate ID, a dependency on an empty or unknown ID, or a cycle, whose
// IDs it lists in order, each depending on the next ("a" → "b" → "a").
func Build(ids []string, deps [][]string) (*Graph, error) {
	n := len(ids)
	index := make(map[string]int, n)
	for i, id := range ids {
		if id == "" {
			continue
		}
		if j, dup := index[id]; dup {
			return nil, fmt.Errorf("duplicate call ID %q (calls #%d and #%d)", id, j, i)
		}
		index[id] = i
	}
	g := &Graph{Deps: make([][]int, n), Dependents: make([][]int, n)}
	// Deps and Dependents share two backing arrays, so that a graph costs a
	// few allocations whatever its size.
	edges := 0
	for i := 0; i < n && i < len(deps); i++ {
		edges += len(deps[i])
	}
	depBuf := make([]int, 0, edges)
	counts := make([]int, n) // dependents per node
	for i := 0; i < n && i < len(deps); i++ {
		if len(deps[i]) == 0 {
			continue
		}
		start := len(depBuf)
		for _, d := range deps[i] {
			if d == "" {
				return nil, fmt.Errorf("%s depends on a call with an empty ID; a call that others depend on needs a unique ID", Name(ids, i))
			}
			j, ok := index[d]
			if !ok {
				return nil, fmt.Errorf("%s depends on %q, which is not in the batch", Name(ids, i), d)
			}
			if !contains(depBuf[start:], j) {
				depBuf = append(depBuf, j)
				counts[j]++
			}
		}
		g.Deps[i] = depBuf[start:len(depBuf):len(depBuf)]
	}
	afterBuf := make([]int, len(depBuf))
	off := 0
	for j, c := range counts {
		if c > 0 {
			g.Dependents[j] = afterBuf[off : off : off+c]
			off += c
		}
	}
	for i, list := range g.Deps {
		for _, j := range list {
			g.Dependents[j] = append(g.Dependents[j], i)
		}
	}
	if cycle := g.findCycle(); cycle != nil {
		const show = 10
		names := make([]string, 0, show+2)
		for _, i := range cycle[:min(len(cycle), show)] {
			names = append(names, Name(ids, i))
		}
		if len(cycle) > show {
			names = append(names, fmt.Sprintf("… (%d calls in all)", len(cycle)))
		}
		names = append(names, names[0])
		return nil, fmt.Errorf("dependency cycle: %s (each call depends on the next)", strings.Join(names, " → "))
	}
	return g, nil
}

// Name names node i for messages: its quoted ID, or "call #i" when the ID
// is empty.
func Name(ids []string, i int) string {
	if ids[i] == "" {
		return "call #" + strconv.Itoa(i)
	}
	return strconv.Quote(ids[i])
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// findCycle returns the nodes of one cycle, in dependency order starting
// from the lowest-numbered node that lies on a cycle, or nil when the
// graph is acyclic. It runs in O(nodes + edges) and uses no recursion.
func (g *Graph) findCycle() []int {
	n := len(g.Deps)
	// Kahn's algorithm removes every node that is not on or behind a cycle.
	pending := make([]int, n)
	queue := make([]int, 0, n)
	for i := range n {
		pending[i] = len(g.Deps[i])
		if pending[i] == 0 {
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		for _, d := range g.Dependents[queue[k]] {
			if pending[d]--; pending[d] == 0 {
				queue = append(queue, d)
			}
		}
	}
	if len(queue) == n {
		return nil
	}
	// Every remaining node has a remaining dependency. Walk dependencies
	// from the lowest remaining node until a node repeats; the repeat
	// closes a cycle.
	start := -1
	for i := range n {
		if pending[i] > 0 {
			start = i
			break
		}
	}
	pos := make(map[int]int)
	var path []int
	for i := start; ; {
		if p, seen := pos[i]; seen {
			return rotate(path[p:])
		}
		pos[i] = len(path)
		path = append(path, i)
		for _, d := range g.Deps[i] {
			if pending[d] > 0 {
				i = d
				break
			}
		}
	}
}

// rotate returns the cycle c (each node depends on the next) starting at
// its lowest node.
func rotate(c []int) []int {
	low := 0
	for k, v := range c {
		if v < c[low] {
			low = k
		}
	}
	return append(append([]int(nil), c[low:]...), c[:low]...)
}
