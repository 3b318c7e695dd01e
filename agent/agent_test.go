package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/openaitool"
)

var update = flag.Bool("update", false, "rewrite the requests in testdata/*.json from what the loop sends")

// weather is a hand-written tool. When barrier is set, each call waits
// until barrier.want calls are running at once (or its context ends),
// which proves that a turn's calls run concurrently.
type weather struct {
	barrier *barrier
}

type barrier struct {
	want    int32
	running atomic.Int32
	peak    atomic.Int32
	once    sync.Once
	all     chan struct{}
}

func newBarrier(n int32) *barrier { return &barrier{want: n, all: make(chan struct{})} }

func (weather) Name() string        { return "weather" }
func (weather) Description() string { return "Current weather in a city." }
func (weather) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name."},"units":{"type":"string","enum":["metric","imperial"],"default":"metric"}},"required":["city"],"additionalProperties":false}`)
}

func (w weather) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if b := w.barrier; b != nil {
		n := b.running.Add(1)
		defer b.running.Add(-1)
		for {
			p := b.peak.Load()
			if n <= p || b.peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n >= b.want {
			b.once.Do(func() { close(b.all) })
		}
		// No wall-clock bound here: if the calls ran one at a time, the
		// first would wait until the registry's time limit ends its
		// context, and the test fails on the error and on peak.
		select {
		case <-b.all:
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	}
	var in struct{ City, Units string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	temps := map[string]float64{"Paris": 18, "Tokyo": 9, "Lima": 22}
	c, ok := temps[in.City]
	if !ok {
		return tool.Result{}, fmt.Errorf("no weather station in %q; try a capital city", in.City)
	}
	if in.Units == "imperial" {
		return tool.Result{Output: fmt.Sprintf("%s: %.0f°F", in.City, c*9/5+32)}, nil
	}
	return tool.Result{Output: fmt.Sprintf("%s: %.0f°C", in.City, c)}, nil
}

// convert is a hand-written tool with constraints the model can get wrong.
type convert struct{}

func (convert) Name() string        { return "convert_temperature" }
func (convert) Description() string { return "Converts a temperature from Celsius." }
func (convert) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"celsius":{"type":"number"},"to":{"type":"string","enum":["fahrenheit","kelvin"]}},"required":["celsius","to"],"additionalProperties":false}`)
}
func (convert) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Celsius float64
		To      string
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	if in.To == "kelvin" {
		return tool.Result{Output: fmt.Sprintf("%g K", in.Celsius+273.15)}, nil
	}
	return tool.Result{Output: fmt.Sprintf("%g°F", math.Round((in.Celsius*9/5+32)*10)/10)}, nil
}

func registry(t *testing.T, w weather) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	for _, tl := range []tool.Tool{w, convert{}} {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// A recording is a conversation with a model API: each request the loop
// must send and the response the model gave, in the real wire format.
type recording struct {
	Comment   string     `json:"comment"`
	Exchanges []exchange `json:"exchanges"`
}

type exchange struct {
	Request  json.RawMessage `json:"request"`
	Status   int             `json:"status,omitempty"`
	Response json.RawMessage `json:"response"`
}

// replay serves the recording testdata/name.json on 127.0.0.1: the n-th
// request must match the n-th recorded request and gets the n-th recorded
// response. It returns the server and a check to call after the run.
func replay(t *testing.T, name string, api API) (*httptest.Server, func()) {
	t.Helper()
	path := filepath.Join("testdata", name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var mu sync.Mutex
	var got []json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(got)
		got = append(got, body)
		mu.Unlock()
		wantPath := "/v1/chat/completions"
		if api == Messages {
			wantPath = "/v1/messages"
			if r.Header.Get("x-api-key") != "test-key" || r.Header.Get("anthropic-version") == "" {
				t.Errorf("request %d: missing x-api-key or anthropic-version", n)
			}
		} else if r.Header.Get("Authorization") != "Bearer test-key" {
			t.Errorf("request %d: Authorization = %q", n, r.Header.Get("Authorization"))
		}
		if r.URL.Path != wantPath || r.Method != http.MethodPost {
			t.Errorf("request %d: %s %s, want POST %s", n, r.Method, r.URL.Path, wantPath)
		}
		if n >= len(rec.Exchanges) {
			t.Errorf("request %d: the recording has only %d exchanges", n, len(rec.Exchanges))
			http.Error(w, "no more recorded responses", http.StatusInternalServerError)
			return
		}
		ex := rec.Exchanges[n]
		if !*update {
			if diff := cmp.Diff(normalize(t, ex.Request), normalize(t, body)); diff != "" {
				t.Errorf("request %d differs from %s (-recorded +sent):\n%s", n, path, diff)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if ex.Status != 0 {
			w.WriteHeader(ex.Status)
		}
		w.Write(ex.Response)
	}))
	check := func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		if !*update && len(got) != len(rec.Exchanges) {
			t.Errorf("the loop sent %d requests, the recording has %d", len(got), len(rec.Exchanges))
		}
		if !*update {
			return
		}
		for i := range min(len(got), len(rec.Exchanges)) {
			var b bytes.Buffer
			json.Indent(&b, got[i], "    ", "  ")
			rec.Exchanges[i].Request = b.Bytes()
		}
		out, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return srv, check
}

// normalize decodes a request and blanks the text of error results, which
// the registry words: the recordings pin the protocol, not the wording.
func normalize(t *testing.T, raw []byte) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("request is not JSON: %v\n%s", err, raw)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["content"].(string); ok && (strings.HasPrefix(s, "Error: ") || x["is_error"] == true) {
				x["content"] = "<error text>"
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

func model(t *testing.T, api API, srv *httptest.Server) *Model {
	if api == Messages {
		return Anthropic("test-key", "claude-sonnet-4-5", WithBaseURL(srv.URL), WithMaxTokens(1024))
	}
	return OpenAI(srv.URL+"/v1", "test-key", "gpt-4.1-mini")
}

// record collects a run's events.
type record struct {
	mu     sync.Mutex
	events []Event
}

func (r *record) observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *record) results() []tool.Outcome {
	var out []tool.Outcome
	for _, e := range r.events {
		if e.Kind == EventToolResult {
			out = append(out, e.Outcome)
		}
	}
	return out
}

func TestParallelToolCalls(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  API
	}{
		{"openai_parallel", ChatCompletions},
		{"anthropic_parallel", Messages},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, check := replay(t, tt.name, tt.api)
			b := newBarrier(3)
			var rec record
			a := New(model(t, tt.api, srv), registry(t, weather{barrier: b}), WithObserver(rec.observe), WithSystem("You are terse."))
			answer, err := a.Run(context.Background(), "What is the weather in Paris, Tokyo and Lima?")
			check()
			if err != nil {
				t.Fatal(err)
			}
			if answer != "Paris 18°C, Tokyo 9°C, Lima 22°C." {
				t.Errorf("answer = %q", answer)
			}
			if p := b.peak.Load(); p != 3 {
				t.Errorf("at most %d calls ran at once, want the turn's 3 calls together", p)
			}
			res := rec.results()
			if len(res) != 3 {
				t.Fatalf("%d results, want 3", len(res))
			}
			for i, want := range []string{"Paris: 18°C", "Tokyo: 9°C", "Lima: 22°C"} {
				if res[i].Result.Output != want {
					t.Errorf("result %d = %+v, want %q (in call order)", i, res[i].Result, want)
				}
			}
		})
	}
}

func TestModelCorrectsToolError(t *testing.T) {
	for _, tt := range []struct {
		name string
		api  API
	}{
		{"openai_correction", ChatCompletions},
		{"anthropic_correction", Messages},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, check := replay(t, tt.name, tt.api)
			var rec record
			a := New(model(t, tt.api, srv), registry(t, weather{}), WithObserver(rec.observe))
			answer, err := a.Run(context.Background(), "What is 18°C in Fahrenheit?")
			check()
			if err != nil {
				t.Fatal(err)
			}
			if answer != "18°C is 64.4°F." {
				t.Errorf("answer = %q", answer)
			}
			res := rec.results()
			if len(res) != 2 {
				t.Fatalf("%d results, want 2", len(res))
			}
			first := res[0].Result
			if !first.IsError || first.Kind != tool.KindInvalidArguments || !strings.Contains(first.Error, "/celsius") || !strings.Contains(first.Error, "/to") {
				t.Errorf("first result = %+v, want an invalid-arguments error naming /celsius and /to", first)
			}
			if second := res[1].Result; second.IsError || second.Output != "64.4°F" {
				t.Errorf("second result = %+v, want 64.4°F", second)
			}
		})
	}
}

// In strict mode the model must send every field, null for "not given";
// the tool still gets its default.
func TestStrictNullsBecomeDefaults(t *testing.T) {
	srv, check := replay(t, "openai_strict", ChatCompletions)
	var rec record
	a := New(model(t, ChatCompletions, srv), registry(t, weather{}), WithStrict(openaitool.StrictOn), WithObserver(rec.observe))
	answer, err := a.Run(context.Background(), "Weather in Paris?")
	check()
	if err != nil {
		t.Fatal(err)
	}
	if answer != "It is 18°C in Paris." {
		t.Errorf("answer = %q", answer)
	}
	if res := rec.results(); len(res) != 1 || res[0].Result.Output != "Paris: 18°C" {
		t.Errorf("results = %+v, want the default units (metric)", res)
	}
}

func TestStepLimit(t *testing.T) {
	srv, check := replay(t, "openai_step_limit", ChatCompletions)
	a := New(model(t, ChatCompletions, srv), registry(t, weather{}), WithMaxSteps(2))
	answer, err := a.Run(context.Background(), "Weather in Paris?")
	check()
	if !errors.Is(err, ErrMaxSteps) {
		t.Fatalf("err = %v, want ErrMaxSteps", err)
	}
	if answer != "Checking again." {
		t.Errorf("answer = %q, want the last text", answer)
	}
}

func TestAPIErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"unauthorized", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, func(err error) bool {
			var ae *APIError
			return errors.As(err, &ae) && ae.StatusCode == 401 && strings.Contains(ae.Body, "Incorrect API key")
		}},
		{"truncated", 200, `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"funct`, func(err error) bool {
			return errors.Is(err, openaitool.ErrMalformed)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := New(OpenAI(srv.URL, "k", "m"), registry(t, weather{})).Run(context.Background(), "hi")
			if !tt.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestStrictRefusalStopsBeforeRequest(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(openMap{}); err != nil {
		t.Fatal(err)
	}
	_, err := New(OpenAI("http://127.0.0.1:1", "", "m"), r, WithStrict(openaitool.StrictOn)).Run(context.Background(), "hi")
	var se *openaitool.StrictError
	if !errors.As(err, &se) || se.Tool != "tags" {
		t.Errorf("err = %v, want a StrictError for tool tags", err)
	}
}

type openMap struct{}

func (openMap) Name() string        { return "tags" }
func (openMap) Description() string { return "Sets tags." }
func (openMap) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`)
}
func (openMap) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func TestCanceledContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(OpenAI(srv.URL, "", "m"), registry(t, weather{})).Run(ctx, "hi")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name      string
		getenv    func(string) string
		api       API
		wantAPI   API
		wantModel string
	}{
		{"openai key", env("OPENAI_API_KEY", "k"), "", ChatCompletions, DefaultOpenAIModel},
		{"local server", env("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1", "OPENAI_MODEL", "llama3.2"), "", ChatCompletions, "llama3.2"},
		{"anthropic", env("ANTHROPIC_API_KEY", "k", "ANTHROPIC_MODEL", "claude-x"), "", Messages, "claude-x"},
		{"both, anthropic asked", env("OPENAI_API_KEY", "k", "ANTHROPIC_API_KEY", "k"), Messages, Messages, DefaultAnthropicModel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := FromEnv(tt.getenv, tt.api, "")
			if err != nil {
				t.Fatal(err)
			}
			if m.API() != tt.wantAPI || m.Name() != tt.wantModel {
				t.Errorf("got %s %s, want %s %s", m.API(), m.Name(), tt.wantAPI, tt.wantModel)
			}
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		getenv  func(string) string
		api     API
		mention string
	}{
		{"nothing", env(), "", "OPENAI_API_KEY"},
		{"local server, no model", env("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"), "", "OPENAI_MODEL"},
		{"anthropic asked, no key", env("OPENAI_API_KEY", "k"), Messages, "ANTHROPIC_API_KEY"},
		{"unknown API", env("OPENAI_API_KEY", "k"), "cohere", "unknown API"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromEnv(tt.getenv, tt.api, "")
			if err == nil || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err = %v, want one mentioning %s", err, tt.mention)
			}
		})
	}
	if _, err := FromEnv(env(), "", ""); !errors.Is(err, ErrNoEndpoint) {
		t.Errorf("err = %v, want ErrNoEndpoint", err)
	}
}
