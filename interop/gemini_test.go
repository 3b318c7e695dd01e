package interop

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/geminitool"
	"google.golang.org/genai"
)

func TestGeminiDefinitions(t *testing.T) {
	defs, err := geminitool.Tools(sampleTools())
	if err != nil {
		t.Fatal(err)
	}
	var gt []*genai.Tool
	roundTrip(t, defs, &gt)
	if len(gt) != 1 || len(gt[0].FunctionDeclarations) != 3 {
		t.Fatalf("decoded as %+v", gt)
	}
	fd := gt[0].FunctionDeclarations
	if fd[0].Name != "now" || fd[0].Parameters != nil {
		t.Errorf("a tool without parameters decoded as %+v", fd[0])
	}
	s := fd[1].Parameters
	if s.Type != genai.TypeObject || s.Properties["passengers"].Type != genai.TypeInteger || *s.Properties["passengers"].Minimum != 1 {
		t.Errorf("search_flights parameters decoded as %+v", s)
	}
	if p := s.Properties["max_price"]; p.Nullable == nil || !*p.Nullable || p.Type != genai.TypeNumber {
		t.Errorf("max_price decoded as %+v", p)
	}
	if tr := s.Properties["traveller"]; tr.Type != genai.TypeObject || tr.Properties["name"].Type != genai.TypeString {
		t.Errorf("the $ref was not inlined: %+v", tr)
	}
	if diff := cmp.Diff([]string{"economy", "business", "first"}, s.Properties["cabin"].Enum); diff != "" {
		t.Errorf("enum (-want +got):\n%s", diff)
	}
	if s.PropertyOrdering[0] != "from" || len(s.PropertyOrdering) != 8 {
		t.Errorf("propertyOrdering = %v", s.PropertyOrdering)
	}
}

const geminiResponse = `{"candidates":[{"content":{"role":"model","parts":[
 {"functionCall":{"name":"weather","args":{"city":"Paris"}}},
 {"functionCall":{"name":"weather","args":{"city":"Lima","units":"imperial"}}},
 {"functionCall":{"id":"fc_3","name":"now","args":{}}}]},
 "finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash"}`

func TestGeminiCallsFromSDKTypes(t *testing.T) {
	var r genai.GenerateContentResponse
	if err := json.Unmarshal([]byte(geminiResponse), &r); err != nil {
		t.Fatal(err)
	}
	sdkCalls := r.FunctionCalls()
	if len(sdkCalls) != 3 {
		t.Fatalf("the SDK read %d calls", len(sdkCalls))
	}
	// A response the SDK built, and a content assembled from SDK values.
	built := &genai.Content{Role: "model", Parts: []*genai.Part{
		genai.NewPartFromFunctionCall("weather", map[string]any{"city": "Paris"}),
		genai.NewPartFromFunctionCall("weather", map[string]any{"city": "Lima", "units": "imperial"}),
		{FunctionCall: &genai.FunctionCall{ID: "fc_3", Name: "now", Args: map[string]any{}}},
	}}
	for name, v := range map[string]any{"GenerateContentResponse": r, "Content": built} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := geminitool.Calls(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(calls) != len(sdkCalls) {
			t.Fatalf("%s: %d calls, the SDK has %d", name, len(calls), len(sdkCalls))
		}
		for i, fc := range sdkCalls {
			args, _ := json.Marshal(fc.Args)
			if fc.Args == nil {
				args = []byte("{}")
			}
			if calls[i].Name != fc.Name || !jsonEqual(calls[i].Args, args) && !(len(fc.Args) == 0 && len(calls[i].Args) == 0) {
				t.Errorf("%s: call %d = %+v, SDK %+v", name, i, calls[i], fc)
			}
			if fc.ID != "" && calls[i].ID != fc.ID {
				t.Errorf("%s: call %d id %q, SDK %q", name, i, calls[i].ID, fc.ID)
			}
		}
	}
}

func TestGeminiResultContent(t *testing.T) {
	calls := []tool.Call{
		{ID: "call_1", Name: "weather"},
		{ID: geminitool.StableIDPrefix + "0123456789abcdef", Name: "now"},
		{ID: "call_3", Name: "weather"},
	}
	outcomes := sampleOutcomes()
	outcomes[1].ID = calls[1].ID
	c := geminitool.Results(calls, outcomes)
	b, _ := json.Marshal(c)
	var gc genai.Content
	roundTrip(t, b, &gc)
	if gc.Role != "user" || len(gc.Parts) != 3 {
		t.Fatalf("decoded as %+v", gc)
	}
	for i, p := range gc.Parts {
		fr := p.FunctionResponse
		if fr == nil || fr.Name != calls[i].Name {
			t.Fatalf("part %d decoded as %+v", i, p)
		}
		if o := outcomes[i].Result; o.IsError && fr.Response["error"] != o.Error || !o.IsError && fr.Response["output"] != o.Output {
			t.Errorf("part %d response = %v", i, fr.Response)
		}
	}
	if gc.Parts[1].FunctionResponse.ID != "" {
		t.Error("a made-up id was sent back to the model")
	}
}
