package jsonschema_test

import (
	"fmt"

	"github.com/miniopenclaw/tool/internal/jsonschema"
)

func Example() {
	s, err := jsonschema.Compile([]byte(`{
		"type": "object",
		"properties": {
			"path": {"type": "string"},
			"mode": {"enum": ["read", "stat"], "default": "read"},
			"count": {"type": "integer", "minimum": 1, "maximum": 9}
		},
		"required": ["path"],
		"additionalProperties": false
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}

	_, violations, err := s.Validate([]byte(`{"PATH":"a.txt","count":12}`), jsonschema.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range violations {
		fmt.Println(v)
	}

	out, _, _ := s.Validate([]byte(`{"path":"a.txt"}`), jsonschema.Limits{})
	fmt.Println(string(out))
	// Output:
	// /PATH: expected no property "PATH" (allowed: path, mode, count), got "a.txt" (did you mean "path"?)
	// /count: expected an integer between 1 and 9, got 12
	// /path: expected required property "path", got nothing (rename "PATH" to "path")
	// {"path":"a.txt","mode":"read"}
}
