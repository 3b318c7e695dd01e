package providercall

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestElements(t *testing.T) {
	for _, tt := range []struct {
		in      string
		n       int
		wantErr string
	}{
		{`[]`, 0, ""},
		{`null`, 0, ""},
		{``, 0, ""},
		{` [1, {"a":[2]}, "x"] `, 3, ""},
		{`[1,2,3,4]`, 0, "more than 3 elements"},
		{`{}`, 0, "not an array"},
		{`[1,2`, 0, "EOF"},
		{`[1,}`, 0, "invalid"},
		{`[1] 2`, 0, "text after the array"},
	} {
		got, err := Elements(json.RawMessage(tt.in), 3)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Elements(%q) = %d, %v; want an error with %q", tt.in, len(got), err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != tt.n {
			t.Errorf("Elements(%q) = %d elements, %v; want %d", tt.in, len(got), err, tt.n)
		}
	}
}
