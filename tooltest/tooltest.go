// Package tooltest checks that an implementation of [tool.Tool] keeps the
// contract the tool package documents, the way testing/slogtest checks a
// slog.Handler and testing/fstest checks an fs.FS.
//
// Typical use inside a test is
//
//	func TestWeather(t *testing.T) {
//		tooltest.Run(t, func(*testing.T) tool.Tool { return newWeather() },
//			json.RawMessage(`{"city":"Paris"}`))
//	}
//
// which runs every check as a subtest with a fresh tool, or, to get every
// problem at once as one error,
//
//	if err := tooltest.TestTool(weather, json.RawMessage(`{"city":"Paris"}`)); err != nil {
//		t.Fatal(err)
//	}
//
// # What is checked
//
//   - name: Name matches ^[a-zA-Z0-9_-]{1,64}$ and is the same on every call.
//   - description: Description is not blank and is the same on every call.
//   - parameters: Parameters is valid JSON, an object schema
//     ({"type":"object",...}), returns the same bytes on every call, and is
//     accepted by [tool.Registry.Register] both for the tool itself and for
//     a plain wrapper of it, which makes the Registry compile the schema with
//     its generic validator. An output schema, if the tool has one, is
//     valid JSON.
//   - valid-args: validArgs pass the Registry's validation, and neither the
//     Registry nor a direct call panics or hangs on them.
//   - malformed-args: arguments that are malformed whatever the schema says
//     (the argument-path rows of the project's bad-input catalog: truncated
//     JSON, a top level that is not an object, duplicate keys, invalid UTF-8,
//     lone surrogates, NaN, a byte order mark, deep nesting, input over the
//     size limit, ...) give an error Result of kind
//     [tool.KindInvalidArguments] through [tool.Registry.Execute], never
//     reach the tool's Execute when the Registry validates for it, and never
//     make a direct call of Execute panic or hang.
//   - canceled-context: Execute returns promptly when its context is
//     canceled before the call or while it runs.
//   - concurrent: Execute, directly and through a Registry, and the other
//     methods may be called from many goroutines at once.
//
// Results returned by direct calls are also checked for consistency: a
// successful Result has an empty Kind, an error Result carries a message,
// Structured, when set, is valid JSON, and every Part of a successful
// Result passes [tool.Part.Validate].
//
// # Limits
//
// Data races are found by the race detector, not by the checks: run the
// tests with -race. A call that has not returned within a bound (5 seconds
// after its context is canceled, 30 seconds otherwise) is reported, and its
// goroutine is left running, since Go cannot stop it. The checks do not know
// what the schema means, so they send no input that only some schemas
// refuse (a wrong type, a missing property): test those with the tool's own
// table tests.
package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// Bounds on how long a check waits for one call. They are generous: a tool
// that honours its context returns in far less, and a tool that misses them
// is hung, not slow.
const (
	cancelWait = 5 * time.Second
	callWait   = 30 * time.Second
	// cancelAfter is how long the canceled-context check lets a call run
	// before it cancels the call's context. It only triggers the
	// cancellation; nothing is asserted about it.
	cancelAfter = 10 * time.Millisecond
	// registryWait bounds a call through a Registry, whose context ends
	// after callWait: the Registry then waits a grace period for the tool.
	registryWait = callWait + tool.DefaultGracePeriod + time.Second
	// workers is the number of goroutines of the concurrent check.
	workers = 8
)

// TestTool tests a [tool.Tool]. validArgs must be a JSON object that the
// tool's schema accepts and with which a call finishes quickly; the checks
// call the tool with it many times, so it should not cause effects that
// matter outside the test.
//
// If TestTool finds any misbehaviours, it returns an error for each,
// combined into a single error with [errors.Join]; each says what happened
// and which rule it breaks. It returns an error at once if validArgs is not
// a JSON object.
func TestTool(t tool.Tool, validArgs json.RawMessage) error {
	if err := checkValidArgs(validArgs); err != nil {
		return err
	}
	var errs []error
	for _, c := range cases {
		errs = append(errs, c.run(t, validArgs)...)
	}
	return errors.Join(errs...)
}

// Run runs the checks of [TestTool] as subtests of t, one per check, each
// with a fresh tool from newTool, so that the state one check leaves in a
// stateful tool cannot hide or cause a problem in another. Each
// misbehaviour is reported with t.Error.
func Run(t *testing.T, newTool func(*testing.T) tool.Tool, validArgs json.RawMessage) {
	t.Helper()
	if err := checkValidArgs(validArgs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range c.run(newTool(t), validArgs) {
				t.Error(err)
			}
		})
	}
}

// A testCase is one check: a rule of the Tool contract and the function
// that looks for breaches of it.
type testCase struct {
	name  string
	check func(c *checker)
}

var cases = []testCase{
	{"name", checkName},
	{"description", checkDescription},
	{"parameters", checkParameters},
	{"valid-args", checkValidCall},
	{"malformed-args", checkMalformed},
	{"canceled-context", checkCanceled},
	{"concurrent", checkConcurrent},
}

func (tc testCase) run(t tool.Tool, validArgs json.RawMessage) (errs []error) {
	c := &checker{name: tc.name, tool: t, valid: validArgs}
	defer func() {
		// Name, Description, Parameters or Options panicked: this check
		// cannot go on, but the others can.
		if v := recover(); v != nil {
			c.errorf("the tool panicked outside Execute: %v; Name, Description, Parameters and Options must not panic", v)
		}
		errs = c.errs
	}()
	tc.check(c)
	return c.errs
}

// A failure is one misbehaviour found by a check.
type failure struct {
	check string // the testCase name
	msg   string // what happened, then the rule it breaks
}

func (f *failure) Error() string { return "tooltest: " + f.check + ": " + f.msg }

// checker carries the state of one check.
type checker struct {
	name  string
	tool  tool.Tool
	valid json.RawMessage
	errs  []error
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, &failure{check: c.name, msg: fmt.Sprintf(format, args...)})
}

func checkValidArgs(validArgs json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(validArgs, &obj); err != nil || obj == nil {
		return fmt.Errorf("tooltest: validArgs must be a JSON object, got %.100q", validArgs)
	}
	return nil
}

func checkName(c *checker) {
	name := c.tool.Name()
	if !tool.ValidName(name) {
		c.errorf("Name() = %q; a tool name must match ^[a-zA-Z0-9_-]{1,64}$, the names every model API accepts", name)
	}
	if again := c.tool.Name(); again != name {
		c.errorf("Name() returned %q, then %q; a tool's name must not change", name, again)
	}
}

func checkDescription(c *checker) {
	d := c.tool.Description()
	if strings.TrimSpace(d) == "" {
		c.errorf("Description() is blank; the model chooses tools by their descriptions")
	}
	if again := c.tool.Description(); again != d {
		c.errorf("Description() changed between calls; the Registry reads it once")
	}
}

func checkParameters(c *checker) {
	p := c.tool.Parameters()
	switch {
	case !json.Valid(p):
		c.errorf("Parameters() is not valid JSON: %.200q; it must be a JSON Schema object", p)
	default:
		var root map[string]json.RawMessage
		if err := json.Unmarshal(p, &root); err != nil {
			c.errorf("Parameters() is not a JSON object: %.200q; it must be an object schema", p)
		} else if string(bytes.TrimSpace(root["type"])) != `"object"` {
			c.errorf(`Parameters() has no "type":"object" at its root; tool arguments are always a JSON object, and model APIs require an object schema`)
		}
	}
	if again := c.tool.Parameters(); !bytes.Equal(p, again) {
		c.errorf("Parameters() returned different bytes on a second call; it must return the same schema every time")
	}
	if out := tool.OptionsOf(c.tool).OutputSchema; out != nil && !json.Valid(out) {
		c.errorf("Options().OutputSchema is not valid JSON: %.200q", out)
	}
	if err := newRegistry().Register(c.tool); err != nil && !errors.Is(err, tool.ErrInvalidName) {
		c.errorf("Registry.Register refused the tool: %v", err)
	}
	if err := newRegistry().Register(&counting{Tool: c.tool}); err != nil && !errors.Is(err, tool.ErrInvalidName) {
		c.errorf("Registry.Register refused a plain wrapper of the tool, so the generic validator cannot compile its schema: %v", err)
	}
}

func checkValidCall(c *checker) {
	if r, ok := register(c.tool); ok {
		o := r.execute(context.Background(), c.valid)
		switch {
		case o.hung:
			c.errorf("Registry.Execute with validArgs did not return within %s", registryWait)
		case o.panicked:
			c.errorf("Registry.Execute panicked with validArgs: %v; it must never panic", o.value)
		case o.res.Kind == tool.KindInvalidArguments:
			c.errorf("the Registry refused validArgs: %s; validArgs must satisfy the tool's schema, and the schema must describe what the tool accepts", o.res.Error)
		case o.res.Kind == tool.KindPanic:
			c.errorf("the tool panicked with validArgs (through Registry.Execute): %s", o.res.Error)
		}
	}
	o := direct(context.Background(), c.tool, c.valid, callWait)
	c.checkDirect("validArgs", o, callWait)
}

// checkDirect reports a direct call of Execute that panicked, hung or
// returned an inconsistent Result.
func (c *checker) checkDirect(input string, o outcome, wait time.Duration) {
	switch {
	case o.hung:
		c.errorf("Execute with %s did not return within %s", input, wait)
	case o.panicked:
		c.errorf("Execute panicked with %s: %v; a tool must report bad input as an error, not panic", input, o.value)
	default:
		if p := inconsistency(o.res, o.err); p != "" {
			c.errorf("Execute with %s returned %s", input, p)
		}
	}
}

// inconsistency describes what is wrong with what Execute returned, or
// returns "".
func inconsistency(res tool.Result, err error) string {
	switch {
	case err == nil && !res.IsError && res.Kind != "":
		return fmt.Sprintf("a successful Result with Kind %q; Kind is empty unless IsError is set", res.Kind)
	case res.IsError && res.Error == "":
		return "an error Result with an empty Error; the model would read no message"
	case len(res.Structured) > 0 && !json.Valid(res.Structured):
		return fmt.Sprintf("a Result whose Structured is not valid JSON: %.100q", res.Structured)
	}
	for i, p := range res.Parts {
		if err := p.Validate(); err != nil && !res.IsError {
			return fmt.Sprintf("a successful Result whose part %d is malformed (%v); Registry.Execute would turn it into a tool_error", i, err)
		}
	}
	return ""
}

func checkMalformed(c *checker) {
	inputs := malformedInputs(c.valid)
	if r, ok := register(c.tool); ok {
		for _, in := range inputs {
			o := r.execute(context.Background(), in.args)
			switch {
			case o.hung:
				c.errorf("Registry.Execute with %s did not return within %s", in.name, registryWait)
			case o.panicked:
				c.errorf("Registry.Execute panicked with %s: %v", in.name, o.value)
			case o.res.Kind == tool.KindPanic:
				c.errorf("the tool panicked with %s (through Registry.Execute), so tool code ran on input that is not valid arguments: %s", in.name, o.res.Error)
			case !o.res.IsError:
				c.errorf("Registry.Execute with %s succeeded; malformed arguments must give an error Result and never reach the tool", in.name)
			case o.res.Kind != tool.KindInvalidArguments:
				c.errorf("Registry.Execute with %s gave an error Result of kind %q, want %q: %s", in.name, o.res.Kind, tool.KindInvalidArguments, o.res.Error)
			}
		}
	}
	w := &counting{Tool: c.tool}
	if r, ok := register(w); ok {
		for _, in := range inputs {
			before := w.calls.Load()
			r.execute(context.Background(), in.args)
			if w.calls.Load() != before {
				c.errorf("the Registry called Execute with %s; malformed arguments must be refused before any tool code runs", in.name)
			}
		}
	}
	for _, in := range inputs {
		c.checkDirect(in.name, direct(context.Background(), c.tool, in.args, callWait), callWait)
	}
}

func checkCanceled(c *checker) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := direct(ctx, c.tool, c.valid, cancelWait)
	switch {
	case o.hung:
		c.errorf("Execute with a context canceled before the call did not return within %s; a tool must honour its context", cancelWait)
	case o.panicked:
		c.errorf("Execute with a context canceled before the call panicked: %v", o.value)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done := make(chan outcome, 1)
	go func() { done <- direct(ctx, c.tool, c.valid, callWait+cancelWait) }()
	timer := time.NewTimer(cancelAfter)
	defer timer.Stop()
	select {
	case o = <-done:
		if o.panicked {
			c.errorf("Execute with validArgs panicked: %v", o.value)
		}
		return // finished before it could be canceled: nothing to check
	case <-timer.C:
	}
	cancel()
	wait := time.NewTimer(cancelWait)
	defer wait.Stop()
	select {
	case o = <-done:
		if o.panicked {
			c.errorf("Execute panicked after its context was canceled: %v", o.value)
		}
	case <-wait.C:
		c.errorf("Execute did not return within %s of its context being canceled while it ran; a tool must stop when its context ends", cancelWait)
	}
}

func checkConcurrent(c *checker) {
	r, registered := register(c.tool)
	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i := range workers {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					report("Execute panicked when called concurrently: %v", v)
				}
			}()
			<-start
			_ = c.tool.Name()
			_ = c.tool.Description()
			_ = c.tool.Parameters()
			_ = tool.OptionsOf(c.tool)
			if _, err := c.tool.Execute(context.Background(), c.valid); err != nil {
				_ = err.Error()
			}
			if registered && i%2 == 0 {
				res := r.reg.Execute(context.Background(), c.tool.Name(), c.valid)
				if res.Kind == tool.KindPanic {
					report("the tool panicked when called concurrently through Registry.Execute: %s", res.Error)
				}
			}
		})
	}
	close(start)
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	timer := time.NewTimer(callWait)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		c.errorf("%d concurrent calls with validArgs did not all return within %s; a tool may be called concurrently with itself", workers, callWait)
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		c.errorf("%s; a tool may be called concurrently with itself", p)
	}
}

// An outcome is what became of one call made by a check.
type outcome struct {
	res      tool.Result
	err      error
	panicked bool
	value    any  // the panic value
	hung     bool // the call did not return in time
}

// within runs f in a goroutine and waits at most d for it, recovering a
// panic. A call that does not return is left running.
func within(d time.Duration, f func() (tool.Result, error)) outcome {
	ch := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o = outcome{panicked: true, value: v}
			}
			ch <- o
		}()
		o.res, o.err = f()
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case o := <-ch:
		return o
	case <-timer.C:
		return outcome{hung: true}
	}
}

// direct calls t.Execute itself, with no Registry in between.
func direct(ctx context.Context, t tool.Tool, args json.RawMessage, wait time.Duration) outcome {
	return within(wait, func() (tool.Result, error) { return t.Execute(ctx, args) })
}

// registered is a tool registered alone in a fresh Registry.
type registered struct {
	reg  *tool.Registry
	name string
}

// register registers t in a fresh Registry. A tool the Registry refuses is
// reported by the name and parameters checks; the others skip it.
func register(t tool.Tool) (registered, bool) {
	r := newRegistry()
	if err := r.Register(t); err != nil {
		return registered{}, false
	}
	return registered{reg: r, name: t.Name()}, true
}

func newRegistry() *tool.Registry {
	// The checks report panics themselves; the Registry's log of them
	// would only repeat them.
	return tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
}

// execute calls the tool through the Registry, bounded by callWait.
func (r registered) execute(ctx context.Context, args json.RawMessage) outcome {
	ctx, cancel := context.WithTimeout(ctx, callWait)
	defer cancel()
	return within(registryWait, func() (tool.Result, error) {
		return r.reg.Execute(ctx, r.name, args), nil
	})
}

// counting wraps a tool as a plain Tool, hiding everything but the four
// methods and its Options, and counts the calls of Execute. Registered in a
// Registry, it makes the Registry validate arguments against Parameters
// with its generic validator before Execute runs.
type counting struct {
	tool.Tool
	calls atomic.Int64
}

func (w *counting) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	w.calls.Add(1)
	return w.Tool.Execute(ctx, args)
}

func (w *counting) Options() tool.Options { return tool.OptionsOf(w.Tool) }

// A malformed input is arguments that no schema may accept.
type malformed struct {
	name string // for messages: "truncated JSON (B1)"
	args json.RawMessage
}

// malformedInputs derives the inputs of the malformed-args check from
// validArgs, so that they reach as deep into the tool's parser as they can:
// a duplicate key repeats a property the tool knows. The B-numbers are the
// rows of the bad-input catalog each one comes from.
func malformedInputs(validArgs json.RawMessage) []malformed {
	v := bytes.TrimSpace(validArgs)
	key, val, ok := firstMember(v)
	member := func(value string) json.RawMessage {
		return json.RawMessage("{" + key + ":" + value + "}")
	}
	dup := json.RawMessage("{" + key + ":" + val + "," + string(v[1:]))
	if !ok { // v is {}
		dup = json.RawMessage("{" + key + ":" + val + "," + key + ":" + val + "}")
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	huge := `"` + strings.Repeat("x", tool.DefaultMaxArgsBytes+1024) + `"`
	return []malformed{
		{"truncated JSON (B1)", v[:len(v)-1]},
		{"JSON cut after a comma (B1)", json.RawMessage("{" + key + ":" + val + ",")},
		{"trailing data after the object", append(bytes.Clone(v), " {}"...)},
		{"an array at the top level (B20)", json.RawMessage("[" + string(v) + "]")},
		{"a string at the top level (B20)", json.RawMessage(`"text"`)},
		{"a number at the top level (B20)", json.RawMessage(`42`)},
		{"null at the top level (B20)", json.RawMessage(`null`)},
		{"true at the top level (B20)", json.RawMessage(`true`)},
		{"a duplicate key (B8)", dup},
		{"a NaN literal (B7)", member(`NaN`)},
		{"an Infinity literal (B7)", member(`-Infinity`)},
		{"a number with a leading zero", member(`007`)},
		{"a single-quoted string", member(`'text'`)},
		{"a comment", json.RawMessage("{" + key + ":" + val + " /* note */}")},
		{"invalid UTF-8 in a string", member("\"a\xff\xfeb\"")},
		{"invalid UTF-8 in a key", json.RawMessage("{\"\xffkey\":1}")},
		{"a lone surrogate escape", member(`"\ud800"`)},
		{"a raw control character in a string", member("\"a\x01b\"")},
		{"a leading byte order mark (B18)", json.RawMessage("\xef\xbb\xbf" + string(v))},
		{"10000 levels of nesting (B22)", member(deep)},
		{"100000 unclosed brackets (B22)", json.RawMessage(strings.Repeat("[", 100000))},
		{"arguments over the default size limit (B23)", member(huge)},
	}
}

// firstMember returns the JSON text of the first key of the object v and
// of its value and true, or a made-up member and false for an empty object.
func firstMember(v []byte) (key, val string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if _, err := dec.Token(); err != nil { // {
		return `"a"`, `1`, false
	}
	tok, err := dec.Token()
	k, isKey := tok.(string)
	if err != nil || !isKey {
		return `"a"`, `1`, false
	}
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return `"a"`, `1`, false
	}
	kb, _ := json.Marshal(k) // a decoded string always encodes
	return string(kb), string(raw), true
}
