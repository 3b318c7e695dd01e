package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/toolsearch"
)

func Example() {
	type post struct{ Channel, Text string }
	type events struct{ From, To string }
	type place struct{ Location string }
	r := tool.NewRegistry()
	for _, t := range []tool.Tool{
		must(tool.New("slack_post_message", "Post a message to a Slack channel.", func(context.Context, post) (string, error) { return "sent", nil })),
		must(tool.New("gcal_list_events", "List events in a Google Calendar within a time range.", func(context.Context, events) (string, error) { return "", nil })),
		must(tool.New("get_current_weather", "Current weather conditions for a location.", func(context.Context, place) (string, error) { return "", nil })),
	} {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
	ix := toolsearch.New(r)
	defer ix.Close()

	for _, q := range []string{"what meetings do I have tomorrow", "is it raining in London", "tell the team channel the deploy is done"} {
		m := ix.Search(q, 1)
		fmt.Printf("%s -> %s\n", q, m[0].Name)
	}

	// The meta-tool a model calls.
	res, err := toolsearch.NewTool(ix, nil).Execute(context.Background(), json.RawMessage(`{"query":"post to slack","limit":1}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(toolsearch.Loaded(res))
	// Output:
	// what meetings do I have tomorrow -> gcal_list_events
	// is it raining in London -> get_current_weather
	// tell the team channel the deploy is done -> slack_post_message
	// [slack_post_message]
}

func must(t tool.Tool, err error) tool.Tool {
	if err != nil {
		panic(err)
	}
	return t
}
