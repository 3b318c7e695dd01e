package oteltool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// callSeries returns the attribute sets of clawtool.tool.calls, each as
// "tool.name error.type".
func callSeries(t *testing.T, s setup) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "clawtool.tool.calls" {
				for _, dp := range d.DataPoints {
					name, _ := dp.Attributes.Value("gen_ai.tool.name")
					et, _ := dp.Attributes.Value("error.type")
					if v, ok := dp.Attributes.Value("otel.metric.overflow"); ok && v.AsBool() {
						got["overflow"] += dp.Value
						continue
					}
					got[name.Emit()+" "+et.Emit()] += dp.Value
				}
			}
		}
	}
	return got
}

// TestInventedNamesDoNotFloodMetrics: a model calls 3,000 tools that do
// not exist, each name new. Each name was an attribute value of the
// call metrics: a series per invented name, until the SDK's cardinality
// limit (2,000) sent every later series, the real tools' too, into one
// overflow series; a meter without that limit kept them all, for the
// life of the process. Calls of no tool count under one name, _OTHER,
// and the real tool's calls keep their own series. Control: calls of
// registered tools do get a series each, by name.
func TestInventedNamesDoNotFloodMetrics(t *testing.T) {
	s := newSetup(t)
	for i := range 3000 {
		if _, err := s.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: fmt.Sprintf("invented_%d", i), Args: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: "echo", Args: json.RawMessage(`{"Text":"a"}`)}}); err != nil {
		t.Fatal(err)
	}
	got := callSeries(t, s)
	want := map[string]int64{"_OTHER not_found": 3000, "echo ": 1}
	if len(got) != len(want) || got["_OTHER not_found"] != 3000 || got["echo "] != 1 {
		t.Errorf("call series after 3,000 invented names: %d of them (%v), want %v", len(got), firstKeys(got, 5), want)
	}

	names := []string{"echo", "echo2", "echo3"}
	control := newSetupOf(t, []tool.Tool{echoTool{}, namedEcho{name: "echo2"}, namedEcho{name: "echo3"}})
	for _, name := range names {
		control.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: name, Args: json.RawMessage(`{"Text":"a"}`)}})
	}
	if got := callSeries(t, control); len(got) != 3 || got["echo2 "] != 1 {
		t.Errorf("control: calls of three registered tools made series %v, want one each", got)
	}
}

// TestLongNameCutInSpans: the name a model sends is cut to 64 bytes in the
// span's name and attribute (a registered name is at most 64 bytes).
func TestLongNameCutInSpans(t *testing.T) {
	s := newSetup(t)
	long := strings.Repeat("n", 1<<20)
	s.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: long, Args: json.RawMessage(`{}`)}})
	spans := s.spans.Ended()
	var found bool
	for _, sp := range spans {
		a := attrs(sp.Attributes())
		if name, ok := a["gen_ai.tool.name"]; ok {
			found = true
			if len(name) > 70 || len(sp.Name()) > 90 {
				t.Errorf("span %d bytes named, tool name attribute %d bytes: not cut", len(sp.Name()), len(name))
			}
		}
	}
	if !found {
		t.Fatal("no execute_tool span")
	}
}

func firstKeys(m map[string]int64, n int) []string {
	var ks []string
	for k := range m {
		if len(ks) == n {
			break
		}
		ks = append(ks, k)
	}
	return ks
}

// namedEcho is echoTool under another name.
type namedEcho struct {
	echoTool
	name string
}

func (n namedEcho) Name() string { return n.name }

// kindTool fails with an error kind of its own, as a remote worker may.
type kindTool struct{ echoTool }

func (kindTool) Name() string { return "kinds" }
func (kindTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Result{IsError: true, Kind: tool.ErrorKind("remote_" + string(args)), Error: "failed"}, nil
}

// TestForeignKindsCountAsOther: a result's kind may come from a remote
// worker, a new value each call; the metrics count every kind the
// library does not report as _OTHER, and the span keeps the kind sent.
func TestForeignKindsCountAsOther(t *testing.T) {
	s := newSetupOf(t, []tool.Tool{echoTool{}, kindTool{}})
	for i := range 50 {
		s.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: "kinds", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}})
	}
	s.ex.Run(t.Context(), []tool.Call{{ID: "1", Name: "echo", Args: json.RawMessage(`{"Fail":"x"}`)}})
	got := callSeries(t, s)
	if len(got) != 2 || got["kinds _OTHER"] != 50 || got["echo tool_error"] != 1 {
		t.Errorf("call series %v, want kinds _OTHER 50 and echo tool_error 1", got)
	}
	var raw bool
	for _, sp := range s.spans.Ended() {
		raw = raw || attrs(sp.Attributes())["error.type"] == `remote_{"n":7}`
	}
	if !raw {
		t.Error("no span holds the kind as sent")
	}
}
