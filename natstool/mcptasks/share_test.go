package mcptasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
)

// TestDurableTaskShareLeavesRoomForOthers: the durable store bounded
// tasks per principal and in all, so that a few principals could take
// every slot (here 4 of 4 tasks each fill 16) and every other principal
// was refused until their tasks expired. It applies mcptool's share
// (TaskLimits.Admits), as the in-memory store does: the last quarter of
// the slots is kept for principals holding few, so a newcomer still gets
// a task.
func TestDurableTaskShareLeavesRoomForOthers(t *testing.T) {
	ns := startNATS(t)
	ctx := context.Background()
	store, err := mcptasks.Open(ctx, connect(t, ns), &mcptasks.Options{Limits: mcptool.TaskLimits{MaxTasks: 4, MaxTotal: 16}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	call := func(owner string) error {
		_, err := store.Create(ctx, mcptool.TaskCall{Owner: owner, Tool: "slow", Args: json.RawMessage(`{}`)})
		return err
	}
	held := 0
	for g := range 4 {
		for range 4 {
			err := call(fmt.Sprint("greedy", g))
			if errors.Is(err, mcptool.ErrTooManyTasks) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			held++
		}
	}
	if err := call("newcomer"); err != nil {
		t.Fatalf("a newcomer after four greedy principals took %d of 16 tasks: %v; want a task", held, err)
	}
	if held >= 16 {
		t.Errorf("the greedy principals took %d of 16 tasks: none was kept for others", held)
	}
}
