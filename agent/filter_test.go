package agent

import (
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/toolsearch"
)

func TestToolFilter(t *testing.T) {
	reg := registry(t, weather{})
	for _, tt := range []struct {
		name    string
		loading toolsearch.Loading
	}{
		{"sent", toolsearch.Loading{Threshold: -1}},
		{"deferred", toolsearch.Loading{Threshold: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := New(&Model{api: ChatCompletions}, reg, WithToolSearch(tt.loading),
				WithToolFilter(func(tl tool.Tool) bool { return tl.Name() != "weather" }))
			sent, d := a.plan()
			for _, tl := range sent {
				if tl.Name() == "weather" {
					t.Error("a filtered tool is sent")
				}
			}
			if d != nil {
				for _, tl := range d.all {
					if tl.Name() == "weather" {
						t.Error("a filtered tool can be found by tool search")
					}
				}
			}
			if len(reg.List()) != 2 {
				t.Errorf("the registry changed: %d tools", len(reg.List()))
			}
		})
	}
}
