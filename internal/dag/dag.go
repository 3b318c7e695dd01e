// Package dag checks the dependency graph of a batch of tool calls and
// orders it: duplicate and unknown IDs, dependencies on an empty ID, and
// cycles are reported before anything runs.
package dag

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Graph is a checked, acyclic dependency graph over nodes 0..n-1. Its
// lists share a few arrays that hold no pointers, so that a graph costs
// few allocations whatever its size and nothing for the garbage collector
// to scan. The zero Graph has no nodes.
type Graph struct {
	edges   []int // every node's dependencies, node by node
	edgeOff []int // node i's dependencies are edges[edgeOff[i]:edgeOff[i+1]]
	back    []int // every node's dependents, node by node
	backOff []int // node j's dependents are back[backOff[j]:backOff[j+1]]
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return max(len(g.edgeOff)-1, 0) }

// Edges returns the number of dependencies, each counted once.
func (g *Graph) Edges() int { return len(g.edges) }

// Deps lists the nodes i depends on, each once, in the order first named.
// The list is shared: the caller must not modify it.
func (g *Graph) Deps(i int) []int {
	lo, hi := g.edgeOff[i], g.edgeOff[i+1]
	return g.edges[lo:hi:hi]
}

// Dependents lists the nodes that depend on j, in node order. The list is
// shared: the caller must not modify it.
func (g *Graph) Dependents(j int) []int {
	lo, hi := g.backOff[j], g.backOff[j+1]
	return g.back[lo:hi:hi]
}

// Build checks the graph whose node i has ID ids[i] and depends on the
// nodes whose IDs are listed in deps[i] (deps may be shorter than ids).
// Empty IDs are allowed as long as nothing depends on them; repeated
// dependencies count once. Build returns an error naming the problem: a
// duplicate ID, a dependency on an empty or unknown ID (the first one, in
// node order), or a cycle, whose IDs it lists in order, each depending on
// the next ("a" → "b" → "a"). It runs in time linear in the number of
// nodes and dependencies.
func Build(ids []string, deps [][]string) (Graph, error) {
	edges := 0
	for _, d := range deps {
		edges += len(d)
	}
	b, err := NewBuilder(ids, edges)
	if err != nil {
		return Graph{}, err
	}
	for i := 0; i < len(ids) && i < len(deps); i++ {
		for _, d := range deps[i] {
			if _, err := b.Add(i, d); err != nil {
				return Graph{}, err
			}
		}
	}
	return b.Graph()
}

// A Builder builds a [Graph] one dependency at a time, checking each as it
// is added, so that a caller learns of the first unknown ID at once. Every
// operation takes constant time, apart from [NewBuilder] and
// [Builder.Graph], which are linear in the size of the graph. (A graph of
// at most [SmallGraph] nodes has no index of its IDs: Add compares the ID
// with at most that many, which costs less than making the index.)
type Builder struct {
	ids     []string
	index   map[string]int // nil for a small graph
	edges   []int          // every dependency, node by node
	span    []int          // span[2i:2i+2]: the part of edges that holds node i's dependencies
	seen    []int          // seen[j] == cur+1: j is already a dependency of cur
	cur     int            // the node whose dependencies are being added
	forward bool           // a node depends on itself or on a later node: there may be a cycle
}

// SmallGraph is the number of nodes up to which a [Builder] finds IDs by
// comparing them rather than through an index.
const SmallGraph = 32

// NewBuilder starts a graph whose node i has ID ids[i], or returns an
// error naming the first duplicate ID. Empty IDs are allowed as long as
// nothing depends on them. edges is how many dependencies the caller
// expects to add (a hint: more or fewer are fine).
func NewBuilder(ids []string, edges int) (Builder, error) {
	n := len(ids)
	b := Builder{ids: ids, edges: make([]int, 0, max(edges, 0))}
	if n <= SmallGraph {
		for i := 1; i < n; i++ {
			for j := range i {
				if Same(ids[i], ids[j]) {
					return Builder{}, duplicate(ids[i], j, i)
				}
			}
		}
	} else {
		b.index = make(map[string]int, n)
		for i, id := range ids {
			if id == "" {
				continue
			}
			if j, dup := b.index[id]; dup {
				return Builder{}, duplicate(id, j, i)
			}
			b.index[id] = i
		}
	}
	// span and seen share one allocation.
	buf := make([]int, 3*n)
	b.span, b.seen = buf[:2*n:2*n], buf[2*n:]
	return b, nil
}

// Same reports whether a and b are the same non-empty ID. It compares
// their lengths and last bytes first, where IDs mostly differ, so that
// the quadratic check of a small batch seldom calls the string
// comparison.
func Same(a, b string) bool {
	return len(a) == len(b) && a != "" && a[len(a)-1] == b[len(a)-1] && a == b
}

func duplicate(id string, j, i int) error {
	return fmt.Errorf("duplicate call ID %s (calls #%d and #%d)", Quote(id), j, i)
}

// lookup returns the node with ID id, which is not empty.
func (b *Builder) lookup(i int, id string) (int, bool) {
	if b.index != nil {
		j, ok := b.index[id]
		return j, ok
	}
	// Most dependencies name a call shortly before their dependent: look
	// there first.
	for j := min(i, len(b.ids)) - 1; j >= 0; j-- {
		if b.ids[j] == id {
			return j, true
		}
	}
	for j := i; j < len(b.ids); j++ {
		if b.ids[j] == id {
			return j, true
		}
	}
	return -1, false
}

// Add records that node i depends on the node with ID id and returns that
// node, or returns an error when id is empty or not in the graph. A
// repeated dependency counts once. Nodes must be given in increasing
// order: once Add was called for node i, it must not be called for a node
// before i.
func (b *Builder) Add(i int, id string) (int, error) {
	if i < b.cur {
		panic(fmt.Sprintf("dag: Add(%d) after Add(%d)", i, b.cur))
	}
	if id == "" {
		return -1, fmt.Errorf("%s depends on a call with an empty ID; a call that others depend on needs a unique ID", Name(b.ids, i))
	}
	j, ok := b.lookup(i, id)
	if !ok {
		return -1, fmt.Errorf("%s depends on %s, which is not in the batch", Name(b.ids, i), Quote(id))
	}
	if b.span[2*i+1] == 0 { // i's first dependency: its list starts here
		b.span[2*i], b.span[2*i+1] = len(b.edges), len(b.edges)
	}
	b.cur = i
	if b.seen[j] != i+1 {
		b.seen[j] = i + 1
		b.edges = append(b.edges, j)
		b.span[2*i+1]++
		b.forward = b.forward || j >= i
	}
	return j, nil
}

// Graph returns the graph built so far, or an error naming a cycle, whose
// IDs it lists in order, each depending on the next ("a" → "b" → "a").
// The Builder must not be used afterwards.
func (b *Builder) Graph() (Graph, error) {
	n, e := len(b.ids), len(b.edges)
	arena := make([]int, 2*(n+1)+e)
	g := Graph{edges: b.edges, edgeOff: arena[: n+1 : n+1], backOff: arena[n+1 : 2*(n+1) : 2*(n+1)], back: arena[2*(n+1):]}
	// Node i's dependencies follow those of the nodes before it in edges
	// (Add takes nodes in increasing order).
	for i := range n {
		g.edgeOff[i+1] = g.edgeOff[i]
		if lo, hi := b.span[2*i], b.span[2*i+1]; hi > lo {
			g.edgeOff[i+1] = hi
		}
	}
	next := b.seen // where each node's next dependent goes; seen is no longer needed
	clear(next)
	for _, j := range b.edges {
		next[j]++
	}
	for j := range n {
		g.backOff[j+1] = g.backOff[j] + next[j]
		next[j] = g.backOff[j]
	}
	for i := range n {
		for _, j := range g.Deps(i) {
			g.back[next[j]] = i
			next[j]++
		}
	}
	// When every node depends only on nodes before it, there is no cycle.
	if !b.forward {
		return g, nil
	}
	if cycle := g.findCycle(); cycle != nil {
		const show = 10
		names := make([]string, 0, show+2)
		for _, i := range cycle[:min(len(cycle), show)] {
			names = append(names, Name(b.ids, i))
		}
		if len(cycle) > show {
			names = append(names, fmt.Sprintf("… (%d calls in all)", len(cycle)))
		}
		names = append(names, names[0])
		return Graph{}, fmt.Errorf("dependency cycle: %s (each call depends on the next)", strings.Join(names, " → "))
	}
	return g, nil
}

// maxQuoted is how many bytes of an ID a message quotes.
const maxQuoted = 64

// Name names node i for messages: its quoted ID (see [Quote]), or "call
// #i" when the ID is empty.
func Name(ids []string, i int) string {
	if ids[i] == "" {
		return "call #" + strconv.Itoa(i)
	}
	return Quote(ids[i])
}

// Quote quotes id for messages, cut to its first 64 bytes (at a character
// boundary, marked with "…") when it is longer, so that a message stays
// short whatever the ID.
func Quote(id string) string {
	if len(id) <= maxQuoted {
		return strconv.Quote(id)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return strconv.Quote(id[:cut] + "…")
}

// findCycle returns the nodes of one cycle, in dependency order starting
// from the lowest-numbered node that lies on a cycle, or nil when the
// graph is acyclic. It runs in O(nodes + edges) and uses no recursion.
func (g *Graph) findCycle() []int {
	n := g.Len()
	// Kahn's algorithm removes every node that is not on or behind a cycle.
	pending := make([]int, n)
	queue := make([]int, 0, n)
	for i := range n {
		pending[i] = len(g.Deps(i))
		if pending[i] == 0 {
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		for _, d := range g.Dependents(queue[k]) {
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
		for _, d := range g.Deps(i) {
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
