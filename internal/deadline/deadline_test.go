package deadline

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type item struct {
	id   int
	slot Slot
}

func (it *item) DeadlineSlot() *Slot { return &it.slot }

// TestQueueOrder pushes items with random deadlines, removes a random
// third of them before their turn, and checks that the rest come out
// earliest first, each exactly once, with Queued and Len kept right.
func TestQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_000_000, 0)
	for round := range 50 {
		var q Queue[*item]
		n := 1 + rng.IntN(200)
		items := make([]*item, n)
		for i := range items {
			items[i] = &item{id: i}
			items[i].slot.At = base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			q.Push(items[i])
		}
		removed := map[int]bool{}
		for _, it := range items {
			if rng.IntN(3) == 0 {
				q.Remove(it)
				q.Remove(it) // a second time does nothing
				removed[it.id] = true
				if it.slot.Queued() {
					t.Fatalf("round %d: item %d still queued after Remove", round, it.id)
				}
			}
		}
		if want := n - len(removed); q.Len() != want {
			t.Fatalf("round %d: Len %d, want %d", round, q.Len(), want)
		}
		var got []time.Time
		seen := map[int]bool{}
		for q.Len() > 0 {
			first, ok := q.First()
			it := q.PopFirst()
			if !ok || first != it {
				t.Fatalf("round %d: First %v %v, PopFirst %v", round, first, ok, it)
			}
			if removed[it.id] || seen[it.id] || it.slot.Queued() {
				t.Fatalf("round %d: item %d popped wrongly (removed %v, seen %v, queued %v)", round, it.id, removed[it.id], seen[it.id], it.slot.Queued())
			}
			seen[it.id] = true
			got = append(got, it.slot.At)
		}
		if !slices.IsSortedFunc(got, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Fatalf("round %d: deadlines out of order: %v", round, got)
		}
		if len(seen) != n-len(removed) {
			t.Fatalf("round %d: %d items popped, want %d", round, len(seen), n-len(removed))
		}
		if _, ok := q.First(); ok {
			t.Fatalf("round %d: First on an empty queue", round)
		}
	}
}
