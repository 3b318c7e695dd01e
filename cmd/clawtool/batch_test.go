package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
)

// sleepTool waits args.ms milliseconds (honouring ctx) and returns
// args.text, or fails with args.fail; its output is structured when
// args.value is set.
type sleepTool struct{ name string }

func (t sleepTool) Name() string                { return t.name }
func (t sleepTool) Description() string         { return "Waits, then answers." }
func (t sleepTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t sleepTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		MS    int             `json:"ms"`
		Text  string          `json:"text"`
		Fail  string          `json:"fail"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	select {
	case <-time.After(time.Duration(max(in.MS, 1)) * time.Millisecond):
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	if in.Fail != "" {
		return tool.Result{}, fmt.Errorf("%s", in.Fail)
	}
	if in.Value != nil {
		return tool.Result{Output: string(in.Value), Structured: in.Value}, nil
	}
	return tool.Result{Output: in.Text}, nil
}

// TestRunBatch runs testdata/batch/*.txtar: each has an -- input -- batch,
// optional -- flags -- ("trace"), and the -- want -- exit code, error and
// standard output (rewritten by -update). Batches run in a synctest
// bubble, so the trace's times are exact.
func TestRunBatch(t *testing.T) {
	files, err := filepath.Glob("testdata/batch/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sec := map[string]string{}
			for _, f := range ar.Files {
				sec[f.Name] = string(f.Data)
			}
			var got string
			synctest.Test(t, func(t *testing.T) {
				r := tool.NewRegistry()
				for _, name := range []string{"fetch", "parse", "summarize"} {
					if err := r.Register(sleepTool{name}); err != nil {
						t.Fatal(err)
					}
				}
				var out bytes.Buffer
				code, err := runBatch(t.Context(), r, []byte(sec["input"]), strings.TrimSpace(sec["flags"]) == "trace", &out)
				got = fmt.Sprintf("exit %d, error: %v\n%s", code, err, out.String())
			})
			if golden.Updating() {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files = ar.Files[:i]
						break
					}
				}
				ar.Files = append(ar.Files, txtar.File{Name: "want", Data: []byte(got)})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(sec["want"], got); diff != "" {
				t.Errorf("%s (-want +got):\n%s\n(run with -update to accept)", file, diff)
			}
		})
	}
}

// TestCallBatch checks that "clawtool call" hands batches to runBatch: a
// JSON array argument, --batch - with standard input, and --trace without
// a batch is a usage error.
func TestCallBatch(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"array argument", []string{"call", `[{"id":"x","name":"calc","args":{"expression":"1+2"}}]`}, "", 0, `"id": "x"`, ""},
		{"batch from stdin", []string{"call", "--batch", "-"}, `[{"name":"nope"}]`, 1, `"id": "#1"`, ""},
		{"dash with array on stdin", []string{"call", "--trace", "-"}, `[{"name":"calc","args":{"expression":"2"}}]`, 0, "trace: 1 calls", ""},
		{"cycle", []string{"call", `[{"id":"a","name":"calc","depends_on":["a"]}]`}, "", 2, "", "dependency cycle"},
		{"trace without batch", []string{"call", "--trace", "calc"}, "", 2, "", "--trace needs a batch"},
		{"batch and name", []string{"call", "--batch", "x.json", "calc"}, "", 2, "", "--batch takes no other arguments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantOut) || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("run(%q) = %d\nstdout: %s\nstderr: %s\nwant %d, stdout containing %q, stderr containing %q",
					tt.args, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}
