package mcptool

import "testing"

func TestHasHugeNumber(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{`{"x":1e400}`, true},
		{`{"x":-1E+400}`, true},
		{`{"a":[1,2,{"b":1e309}]}`, true},
		{`{"x":1e308}`, false},
		{`{"x":1e-400}`, false}, // underflows to 0, which go-sdk reads
		{`{"x":"1e400"}`, false},
		{`{"x\"1e400":2}`, false},
		{`{"x":12345678901234567890}`, false},
		{`{"name":"echo","arguments":{"t":"a\\"}, "n": 1e999}`, true},
	} {
		if got := hasHugeNumber([]byte(tt.in)); got != tt.want {
			t.Errorf("hasHugeNumber(%s) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
