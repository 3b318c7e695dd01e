package schemarewrite

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool/internal/jsonobj"
)

func parse(t *testing.T, s string) jsonobj.Object {
	t.Helper()
	o, err := jsonobj.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestTypes(t *testing.T) {
	for _, tt := range []struct {
		node string
		want []string
	}{
		{`{"type":"string"}`, []string{"string"}},
		{`{"type":["integer","null"]}`, []string{"integer", "null"}},
		{`{"enum":["a"]}`, nil},
		{`{"type":7}`, nil},
	} {
		if diff := cmp.Diff(tt.want, Types(parse(t, tt.node))); diff != "" {
			t.Errorf("Types(%s) (-want +got):\n%s", tt.node, diff)
		}
	}
}

func TestEscapePointer(t *testing.T) {
	if got := EscapePointer("a/b~c"); got != "a~1b~0c" {
		t.Errorf("EscapePointer = %q, want a~1b~0c", got)
	}
}

func TestAddToDescription(t *testing.T) {
	for _, tt := range []struct {
		name, node         string
		notes, constraints []string
		want               string
	}{
		{"nothing", `{"type":"string"}`, nil, nil, `{"type":"string"}`},
		{"new description", `{"type":"string"}`, []string{"Deprecated."}, nil, `{"type":"string","description":"Deprecated."}`},
		{"after the text, constraints last", `{"description":"Mail.","type":"string"}`, []string{"Default: 1."}, []string{"format=\"email\"", "minLength=1"},
			`{"description":"Mail. Default: 1. Constraints: format=\"email\", minLength=1.","type":"string"}`},
		{"empty description", `{"description":""}`, nil, []string{"uniqueItems=true"}, `{"description":"Constraints: uniqueItems=true."}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.node)
			AddToDescription(&o, tt.notes, tt.constraints)
			got, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}
