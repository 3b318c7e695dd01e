package mcptool

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// FuzzLegacyAnswer: any params of any tasks method, and any result given
// to the declarations' patch, is answered without a panic, within the
// request's deadline, and a patched result is still JSON.
func FuzzLegacyAnswer(f *testing.F) {
	for _, seed := range []struct{ method, params string }{
		{"tools/call", `{"name":"maybe","arguments":{},"task":{"ttl":5}}`},
		{"tools/call", `{"name":"maybe","task":5}`},
		{"tools/call", `{"name":"must"}`},
		{"tasks/get", `{"taskId":"x"}`},
		{"tasks/get", `{"taskId":7}`},
		{"tasks/result", `{"taskId":""}`},
		{"tasks/list", `{"cursor":"bzEw"}`},
		{"tasks/list", `{"cursor":"` + "\xff" + `"}`},
		{"tasks/cancel", `null`},
		{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`},
		{"tools/list", `{"tools":[{"name":"maybe"},{"name":5}]}`},
	} {
		f.Add(seed.method, seed.params)
	}
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("maybe", "Quick.", func(context.Context, struct{}) (string, error) { return "ok", nil },
		tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("must", "Quick.", func(context.Context, struct{}) (string, error) { return "ok", nil },
		tool.WithTask(tool.TaskRequired))))
	s := NewServer(r, WithTasks(TaskLimits{MaxTasks: 8, MaxTotal: 8, PollsPerSecond: 1e9, PollBurst: 1 << 20}))
	defer s.Close()
	f.Fuzz(func(t *testing.T, method, params string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if s.legacyHandles(ctx, method, json.RawMessage(params)) {
			s.legacyAnswer(ctx, legacyCaller{owner: "fuzz"}, method, json.RawMessage(params))
		}
		for _, m := range []string{"initialize", "tools/list"} {
			out := s.legacyPatch(m, json.RawMessage(params))
			if json.Valid([]byte(params)) && !json.Valid(out) {
				t.Fatalf("%s: patched %q into invalid JSON %q", m, params, out)
			}
		}
	})
}
