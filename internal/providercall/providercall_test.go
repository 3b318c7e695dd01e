package providercall

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
)

func TestAssignIDs(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []string
		want []string
	}{
		{"kept", []string{"a", "b"}, []string{"a", "b"}},
		{"repeated", []string{"a", "a", "a"}, []string{"a", "a_2", "a_3"}},
		{"suffix already taken", []string{"a", "a_2", "a"}, []string{"a", "a_2", "a_3"}},
		{"missing", []string{"", "x"}, []string{StableID("p_", 0, "f", nil), "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := make([]tool.Call, len(tt.in))
			for i, id := range tt.in {
				calls[i] = tool.Call{ID: id, Name: "f"}
			}
			calls = AssignIDs(calls, "p_")
			if err := CheckIDs(calls); err != nil {
				t.Errorf("AssignIDs(%q): %v", tt.in, err)
			}
			var got []string
			for _, c := range calls {
				got = append(got, c.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("AssignIDs(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStableID(t *testing.T) {
	a := StableID("call_", 1, "weather", []byte(`{"city":"Paris"}`))
	if b := StableID("call_", 1, "weather", []byte(`{"city":"Paris"}`)); a != b {
		t.Errorf("StableID differs between calls: %q, %q", a, b)
	}
	if !strings.HasPrefix(a, "call_") || len(a) != len("call_")+16 {
		t.Errorf("StableID = %q, want call_ and 16 hex digits", a)
	}
	for _, other := range []string{
		StableID("call_", 2, "weather", []byte(`{"city":"Paris"}`)),
		StableID("call_", 1, "weathe", []byte(`r{"city":"Paris"}`)),
		StableID("call_", 1, "weather", []byte(`{"city":"Oslo"}`)),
	} {
		if other == a {
			t.Errorf("StableID gave %q for another call too", a)
		}
	}
}

func TestArguments(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, ``}, {` null `, ``}, {` {"a":1} `, `{"a":1}`}, {`"{}"`, `"{}"`}, {`7`, `7`}, {`nul`, `nul`},
	} {
		if got := Arguments(json.RawMessage(tt.in)); string(got) != tt.want {
			t.Errorf("Arguments(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Arguments(json.RawMessage(`null`)); got != nil {
		t.Errorf("Arguments(null) = %#v, want nil", got)
	}
}

func TestErrorMessageAndShorten(t *testing.T) {
	if got := ErrorMessage(tool.Result{IsError: true}); got != "the tool failed without a message" {
		t.Errorf("ErrorMessage(no message) = %q", got)
	}
	if got := ErrorMessage(tool.Result{IsError: true, Error: "boom"}); got != "boom" {
		t.Errorf("ErrorMessage = %q, want boom", got)
	}
	if got := Shorten("abcdef", 3); got != "abc…" {
		t.Errorf("Shorten = %q", got)
	}
	if got := Shorten("abc", 3); got != "abc" {
		t.Errorf("Shorten = %q", got)
	}
}

func TestCheckIDs(t *testing.T) {
	for _, tt := range []struct {
		name string
		ids  []string
		ok   bool
	}{
		{"none", nil, true},
		{"distinct", []string{"a", "b"}, true},
		{"empty", []string{"a", ""}, false},
		{"repeated", []string{"a", "b", "a"}, false},
	} {
		calls := make([]tool.Call, len(tt.ids))
		for i, id := range tt.ids {
			calls[i].ID = id
		}
		if err := CheckIDs(calls); (err == nil) != tt.ok {
			t.Errorf("%s: CheckIDs(%q) = %v, want ok %v", tt.name, tt.ids, err, tt.ok)
		}
	}
}

// TestAssignIDsRepeatedIDBounded is an attack: a model response whose
// calls all carry the same id. Each repeat looked for its suffix from
// "_2" on, so n repeats tried n²/2 ids: 8,000 calls (88 KB of response)
// took seconds, and a response of the agent's 32 MiB bound would not
// finish. The ids tried must stay linear in the batch, whatever mix of
// repeats and ids that look like suffixes the model sends.
func TestAssignIDsRepeatedIDBounded(t *testing.T) {
	const n = 20000
	for _, tt := range []struct {
		name string
		id   func(i int) string
	}{
		{"one id", func(int) string { return "a" }},
		{"suffixes taken first", func(i int) string {
			if i < n/2 {
				return "a_" + strconv.Itoa(i+2)
			}
			return "a"
		}},
		{"two bases interleaved", func(i int) string { return []string{"a", "b", "a_2"}[i%3] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := make([]tool.Call, n)
			for i := range calls {
				calls[i] = tool.Call{ID: tt.id(i), Name: "f"}
			}
			probes := 0
			assignIDs(calls, "p_", &probes)
			if err := CheckIDs(calls); err != nil {
				t.Fatal(err)
			}
			if probes > 2*n {
				t.Errorf("%d calls: %d ids tried, want at most %d (linear in the batch)", n, probes, 2*n)
			}
		})
	}
}
