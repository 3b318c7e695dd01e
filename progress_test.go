package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// reporter is a tool that reports progress twice and logs to its caller.
func reporter(t *testing.T) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	must(t, r.Register(tool.Must(tool.New("report", "Reports.",
		func(ctx context.Context, _ struct{}) (string, error) {
			tool.ReportProgress(ctx, 1, 2, "half")
			tool.ClientLogger(ctx).Info("working", "step", 1)
			tool.ClientLogger(ctx).Debug("detail")
			tool.ReportProgress(ctx, 2, 2, "")
			return "done", nil
		}))))
	return r
}

// TestProgressAndClientLogger checks that what a tool reports reaches the
// functions its caller attached to the context, through Execute's call
// context, and that a caller who attached nothing gets nothing and no
// failure.
func TestProgressAndClientLogger(t *testing.T) {
	r := reporter(t)
	var reports []string
	var logs bytes.Buffer
	ctx := tool.WithProgress(context.Background(), func(p, total float64, msg string) {
		reports = append(reports, strings.TrimSpace(fmt.Sprint(p, " ", total, " ", msg)))
	})
	ctx = tool.WithClientLogger(ctx, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})))
	if res := r.Execute(ctx, "report", nil); res.IsError || res.Output != "done" {
		t.Fatalf("Execute = %+v", res)
	}
	if got, want := strings.Join(reports, "; "), "1 2 half; 2 2"; got != want {
		t.Errorf("progress reports = %q, want %q", got, want)
	}
	if got, want := logs.String(), "level=INFO msg=working step=1\n"; got != want {
		t.Errorf("client log = %q, want %q (Debug is below the handler's level)", got, want)
	}

	if res := r.Execute(context.Background(), "report", nil); res.IsError {
		t.Fatalf("Execute without listeners = %+v", res)
	}
	if l := tool.ClientLogger(context.Background()); l == nil || l.Enabled(context.Background(), slog.LevelError) {
		t.Errorf("ClientLogger without a logger = %v, want a non-nil logger that is never enabled", l)
	}
}

// A host that wants a tool's messages for its caller attaches a logger to
// the call's context; the tool writes to ClientLogger without knowing who
// listens (clawtool serve sends them to MCP clients).
func ExampleClientLogger() {
	r := tool.NewRegistry()
	err := r.Register(tool.Must(tool.New("index", "Indexes a folder.",
		func(ctx context.Context, in struct {
			Folder string `json:"folder"`
		}) (string, error) {
			tool.ClientLogger(ctx).Info("indexing", "folder", in.Folder)
			return "indexed 3 files", nil
		})))
	if err != nil {
		panic(err)
	}
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	ctx := tool.WithClientLogger(context.Background(),
		slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime})))
	res := r.Execute(ctx, "index", json.RawMessage(`{"folder":"docs"}`))
	fmt.Println(res.Output)
	// Output:
	// level=INFO msg=indexing folder=docs
	// indexed 3 files
}
