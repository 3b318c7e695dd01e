package deadline

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
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

// TestTimer checks that the timer is set for an item due before it
// fires and left alone for one due later, that when it fires Due hands
// out exactly the items due, earliest first, and sets it for the next,
// and that it is unset once the queue is empty.
func TestTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var tm Timer[*item]
		var fired [][]int
		fire := func() {
			mu.Lock()
			defer mu.Unlock()
			var ids []int
			for _, it := range tm.Due(time.Now(), nil) {
				ids = append(ids, it.id)
			}
			fired = append(fired, ids)
		}
		tm.Fire = fire
		start := time.Now()
		add := func(id int, after time.Duration) *item {
			it := &item{id: id}
			it.slot.At = start.Add(after)
			mu.Lock()
			tm.Add(it)
			mu.Unlock()
			return it
		}
		add(1, 30*time.Millisecond)
		add(2, 10*time.Millisecond)
		gone := add(3, 20*time.Millisecond)
		add(4, 10*time.Millisecond)
		mu.Lock()
		if got := tm.FiresAt().Sub(start); got != 10*time.Millisecond {
			t.Errorf("fires at %v, want 10ms", got)
		}
		tm.Remove(gone)
		mu.Unlock()
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := [][]int{{2, 4}, {1}}
		if len(fired) != 2 || !slices.Equal(fired[0], want[0]) && !slices.Equal(fired[0], []int{4, 2}) || !slices.Equal(fired[1], want[1]) {
			t.Errorf("fired %v, want %v (the removed item never)", fired, want)
		}
		if tm.Len() != 0 || !tm.FiresAt().IsZero() {
			t.Errorf("%d left, fires at %v; want none, unset", tm.Len(), tm.FiresAt())
		}
		tm.Stop()
	})
}
