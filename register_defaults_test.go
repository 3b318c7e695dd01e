package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

type bigDefault struct {
	Note string `json:"note" default:"a note long enough that, with the rest, it passes a registry's 100-byte argument limit on its own, and then some"`
}

type itemDefaults struct {
	Items []struct {
		Mode string `json:"mode" default:"a default of forty bytes, more or less."`
	} `json:"items"`
}

// TestDefaultsBoundedAtRegistration: a schema whose defaults alone exceed
// the argument limit is refused when registered, for hand-written and
// typed tools alike.
func TestDefaultsBoundedAtRegistration(t *testing.T) {
	huge := strings.Repeat("x", 3<<20)
	hand := echotool.New("echo", "Echoes.", `{"type":"object","properties":{"a":{"type":"string","default":"`+huge+`"}}}`)
	if err := tool.NewRegistry().Register(hand); !errors.Is(err, tool.ErrInvalidSchema) || !strings.Contains(err.Error(), "defaults total 3145730 bytes") {
		t.Errorf("Register(3 MB default) = %v, want ErrInvalidSchema naming the defaults' size", err)
	}
	typed := tool.Must(tool.New("note", "Notes.", func(ctx context.Context, in bigDefault) (string, error) { return in.Note, nil }))
	small := tool.NewRegistry(tool.WithArgumentLimits(100, 0))
	if err := small.Register(typed); !errors.Is(err, tool.ErrInvalidSchema) || !strings.Contains(err.Error(), "100-byte argument limit") {
		t.Errorf("Register(typed tool with a default over the limit) = %v, want ErrInvalidSchema", err)
	}
	if err := small.RegisterUnique(hand); !errors.Is(err, tool.ErrInvalidSchema) {
		t.Errorf("RegisterUnique(3 MB default) = %v, want ErrInvalidSchema", err)
	}
	if err := tool.NewRegistry().Register(typed); err != nil {
		t.Errorf("Register(typed tool within the default limit) = %v", err)
	}
}

// TestDefaultsBoundedPerCall: a default added to every item of an array
// can make the arguments outgrow the limit; the call is refused then, and
// the tool never sees more than the limit.
func TestDefaultsBoundedPerCall(t *testing.T) {
	r := tool.NewRegistry(tool.WithArgumentLimits(200, 0))
	var got int
	if err := r.Register(tool.Must(tool.New("items", "Items.", func(ctx context.Context, in itemDefaults) (int, error) {
		got = len(in.Items)
		return got, nil
	}))); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(echotool.New("echo", "Echoes.", `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"mode":{"type":"string","default":"a default of forty bytes, more or less."}}}}}}`)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"items", "echo"} {
		res := r.Execute(context.Background(), name, json.RawMessage(`{"items":[{},{}]}`))
		if res.IsError {
			t.Errorf("%s with 2 items: %s", name, res.Error)
		} else if name == "echo" && len(res.Output) > 200 {
			t.Errorf("echo received %d bytes", len(res.Output))
		}
		res = r.Execute(context.Background(), name, json.RawMessage(`{"items":[{},{},{},{},{},{},{},{},{}]}`))
		if res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "once the") || !strings.Contains(res.Error, "defaults are added") {
			t.Errorf("%s with 9 items: got %+v, want invalid_arguments about the defaults", name, res)
		}
	}
	if got != 2 {
		t.Errorf("the typed tool ran with %d items, want 2 (and never with 9)", got)
	}
}
