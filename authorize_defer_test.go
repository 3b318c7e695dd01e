package tool_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// lazyAuth defers the arguments and may decline outcomes.
type lazyAuth struct {
	records  bool
	read     bool // read the arguments in Authorize
	seen     []string
	outcomes []string
}

func (a *lazyAuth) DefersArgs() bool      { return true }
func (a *lazyAuth) RecordsOutcomes() bool { return a.records }

func (a *lazyAuth) Authorize(ctx context.Context, req tool.AccessRequest) error {
	if req.Args != nil {
		a.seen = append(a.seen, "eager")
	}
	if a.read {
		args, err := req.Arguments()
		if err != nil {
			return err
		}
		a.seen = append(a.seen, string(args))
	}
	return nil
}

func (a *lazyAuth) Outcome(ctx context.Context, req tool.AccessRequest, res tool.Result, took time.Duration) {
	args, _ := req.Arguments()
	a.outcomes = append(a.outcomes, string(args))
}

func TestDeferredArguments(t *testing.T) {
	type in struct {
		Path  string         `json:"path"`
		Depth int            `json:"depth,omitempty" default:"3"`
		Tags  map[string]int `json:"tags,omitempty"`
	}
	typed := tool.Must(tool.New("typed", "t", func(ctx context.Context, a in) (string, error) {
		if a.Tags != nil {
			a.Tags["changed"] = 1 // the caller's map: the tool changes what it was given
		}
		return "ok", nil
	}, tool.WithInline()))
	hand := authHandTool{"hand", `{"type":"object","properties":{"path":{"type":"string"}}}`,
		func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Output: "ok"}, nil
		}}

	for _, tt := range []struct {
		name          string
		read, records bool
		tool, args    string
		seen          []string
		outcomes      []string
	}{
		{"not read", false, false, "typed", `{"path":"a"}`, nil, nil},
		{"read", true, false, "typed", `{"path":"a"}`, []string{`{"path":"a","depth":3}`}, nil},
		{"read before the tool changes it", true, true, "typed", `{"path":"a","tags":{"x":1}}`,
			[]string{`{"path":"a","depth":3,"tags":{"x":1}}`}, []string{`{"path":"a","depth":3,"tags":{"x":1}}`}},
		{"hand-written", true, true, "hand", `{"path":"b"}`, []string{`{"path":"b"}`}, []string{`{"path":"b"}`}},
		{"outcomes without arguments read first", false, true, "hand", `{"path":"b"}`, nil, []string{`{"path":"b"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &lazyAuth{read: tt.read, records: tt.records}
			reg := tool.NewRegistry(tool.WithAuthorizer(a))
			reg.Register(typed)
			reg.Register(hand)
			if res := reg.Execute(context.Background(), tt.tool, json.RawMessage(tt.args)); res.IsError {
				t.Fatal(res.Error)
			}
			if !slices.Equal(a.seen, tt.seen) {
				t.Errorf("Authorize saw %q, want %q", a.seen, tt.seen)
			}
			if !slices.Equal(a.outcomes, tt.outcomes) {
				t.Errorf("outcomes %q, want %q", a.outcomes, tt.outcomes)
			}
		})
	}
}
