package plugins_test

import (
	"fmt"

	"github.com/miniopenclaw/tool/plugins"
)

func ExampleParse() {
	file := []byte(`{
	  "mcpServers": {
	    "search": {"url": "https://search.example/mcp", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
	               "prefix": "web_", "tools": ["search", "fetch_*"]}
	  }
	}`)
	env := func(name string) (string, bool) {
		if name == "SEARCH_TOKEN" {
			return "tk-12345", true
		}
		return "", false
	}
	c, err := plugins.Parse(file, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := c.Servers["search"]
	fmt.Println(s.URL, s.Prefix, s.Tools)
	fmt.Println(c.Redact("request failed: " + s.Headers["Authorization"]))
	// Output:
	// https://search.example/mcp web_ [search fetch_*]
	// request failed: Bearer [redacted]
}
