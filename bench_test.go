package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/schema"
)

// searchArgs is the benchmark workload: the arguments of a flight search
// tool, with patterns, an enum, a default and a range.
type searchArgs struct {
	From       string   `json:"from" pattern:"^[A-Z]{3}$" description:"IATA code of the departure airport"`
	To         string   `json:"to" pattern:"^[A-Z]{3}$" description:"IATA code of the arrival airport"`
	Date       string   `json:"date" description:"departure date, YYYY-MM-DD"`
	Passengers int      `json:"passengers" default:"1" minimum:"1" maximum:"9"`
	Cabin      string   `json:"cabin,omitempty" enum:"economy,business,first"`
	Flexible   bool     `json:"flexible,omitempty"`
	MaxPrice   float64  `json:"max_price,omitempty"`
	Airlines   []string `json:"airlines,omitempty"`
}

// searchResult is the small 8-field struct the workload's function returns.
type searchResult struct {
	Flight     string  `json:"flight"`
	From       string  `json:"from"`
	To         string  `json:"to"`
	Date       string  `json:"date"`
	Seats      int     `json:"seats"`
	Cabin      string  `json:"cabin"`
	Price      float64 `json:"price"`
	Refundable bool    `json:"refundable"`
}

func searchFlights(_ context.Context, in searchArgs) (searchResult, error) {
	return searchResult{Flight: "UA 1", From: in.From, To: in.To, Date: in.Date, Seats: in.Passengers, Cabin: in.Cabin, Price: 420.5}, nil
}

var searchInput = []byte(`{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":2,"cabin":"business","airlines":["UA","DL"]}`)

// baseline (a): encoding/json Unmarshal into the struct, a direct call,
// json.Marshal of the result.
func baselineCall(args []byte) ([]byte, error) {
	var in searchArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	out, err := searchFlights(context.Background(), in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// compare runs baseline and target b.N times each, interleaved in small
// chunks so that both see the same machine load, and reports the medians
// over the chunks: target's time per call as ns/op, the baseline's as
// baseline-ns/op, and as x-baseline the median of each chunk's ratio to
// the baseline chunk run just before it. A chunk the machine took the
// core from counts as one chunk, not as its time. Allocations reported
// are the target's.
func compare(b *testing.B, baseline, target func()) {
	b.Helper()
	const chunk = 64
	var base, tgt, ratio []float64
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		start := time.Now()
		for range n {
			baseline()
		}
		bt := float64(time.Since(start).Nanoseconds()) / float64(n)
		b.StartTimer()
		start = time.Now()
		for range n {
			target()
		}
		tt := float64(time.Since(start).Nanoseconds()) / float64(n)
		b.StopTimer()
		base, tgt, ratio = append(base, bt), append(tgt, tt), append(ratio, tt/bt)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(tgt), "ns/op")
	b.ReportMetric(median(base), "baseline-ns/op")
	b.ReportMetric(median(ratio), "x-baseline")
}

func baseline() {
	if _, err := baselineCall(searchInput); err != nil {
		panic(err)
	}
}

func BenchmarkExecuteTyped(b *testing.B) {
	r := tool.NewRegistry()
	if err := r.Register(tool.Must(tool.New("search_flights", "Searches flights.", searchFlights))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	compare(b, baseline, func() {
		if res := r.Execute(ctx, "search_flights", searchInput); res.IsError {
			b.Fatal(res.Error)
		}
	})
}

// BenchmarkExecuteTypedInline is BenchmarkExecuteTyped with the tool
// marked Inline: the same checks, timeout context and panic guard, run in
// the caller's goroutine.
func BenchmarkExecuteTypedInline(b *testing.B) {
	r := tool.NewRegistry()
	if err := r.Register(tool.Must(tool.New("search_flights", "Searches flights.", searchFlights, tool.WithInline()))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	compare(b, baseline, func() {
		if res := r.Execute(ctx, "search_flights", searchInput); res.IsError {
			b.Fatal(res.Error)
		}
	})
}

// BenchmarkExecuteTypedHere is BenchmarkExecuteTyped through
// ExecuteHere: the tool is not Inline, but runs in the caller's goroutine
// all the same, watched by the registry's one watcher of such calls.
func BenchmarkExecuteTypedHere(b *testing.B) {
	r := tool.NewRegistry()
	if err := r.Register(tool.Must(tool.New("search_flights", "Searches flights.", searchFlights))); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	abandoned := func(res tool.Result) { panic(res.Error) }
	compare(b, baseline, func() {
		if res, ok := r.ExecuteHere(ctx, "search_flights", searchInput, abandoned); !ok || res.IsError {
			b.Fatal(res.Error)
		}
	})
}

// searchSchema is searchArgs written by hand, for the generic-validator
// path.
const searchSchema = `{"type":"object","properties":{
	"from":{"type":"string","pattern":"^[A-Z]{3}$"},"to":{"type":"string","pattern":"^[A-Z]{3}$"},
	"date":{"type":"string"},"passengers":{"type":"integer","default":1,"minimum":1,"maximum":9},
	"cabin":{"type":"string","enum":["economy","business","first"]},"flexible":{"type":"boolean"},
	"max_price":{"type":"number"},"airlines":{"type":"array","items":{"type":"string"}}},
	"required":["from","to","date"],"additionalProperties":false}`

// handSearch is search_flights as a hand-written tool: it decodes its
// (already validated) arguments with encoding/json.
type handSearch struct{}

func (handSearch) Name() string                { return "search_flights" }
func (handSearch) Description() string         { return "Searches flights." }
func (handSearch) Parameters() json.RawMessage { return json.RawMessage(searchSchema) }
func (handSearch) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	out, err := baselineCall(args)
	return tool.Result{Output: string(out)}, err
}

// BenchmarkExecuteHandWritten measures the generic path: strict parse and
// validation against a compiled hand-written schema, then the tool's own
// encoding/json decode.
func BenchmarkExecuteHandWritten(b *testing.B) {
	r := tool.NewRegistry()
	if err := r.Register(handSearch{}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	compare(b, baseline, func() {
		if res := r.Execute(ctx, "search_flights", searchInput); res.IsError {
			b.Fatal(res.Error)
		}
	})
}

// BenchmarkExecuteManyTools compares Execute with 1 and with 10,000
// registered tools; x-baseline is the ratio of the two.
func BenchmarkExecuteManyTools(b *testing.B) {
	small, large := tool.NewRegistry(), tool.NewRegistry()
	search := tool.Must(tool.New("search_flights", "Searches flights.", searchFlights))
	small.Register(search)
	large.Register(search)
	for i := range 10_000 {
		large.Register(tool.Must(tool.New(fmt.Sprintf("tool_%05d", i), "Filler.", searchFlights)))
	}
	ctx := context.Background()
	compare(b, func() { small.Execute(ctx, "search_flights", searchInput) },
		func() { large.Execute(ctx, "search_flights", searchInput) })
}

// BenchmarkGoroutineFloor is the floor of any call that runs its tool in
// a goroutine of its own under a time limit, as Registry.Execute does by
// default: baseline (a) with only the function in a new goroutine (the
// arguments decoded and the result encoded in the caller's, whose stack
// has grown), its caller waiting on the goroutine's answer or the end of
// a timeout context, against (a) called directly. No registry, no
// validation: the ratio is what the handoff alone costs, which
// ExecuteTyped pays on top of ExecuteTypedInline.
func BenchmarkGoroutineFloor(b *testing.B) {
	type answer struct {
		out searchResult
		err error
	}
	compare(b, baseline, func() {
		var in searchArgs
		if err := json.Unmarshal(searchInput, &in); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(chan answer, 1)
		go func() {
			out, err := searchFlights(ctx, in)
			done <- answer{out, err}
		}()
		var a answer
		select {
		case a = <-done:
		case <-ctx.Done():
			b.Fatal("timed out")
		}
		cancel()
		if a.err != nil {
			b.Fatal(a.err)
		}
		if _, err := json.Marshal(a.out); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkHandoffFloor is the least any call can cost that runs its
// tool on a goroutine other than its caller's, which is what lets Execute
// return a call whose tool ignores its context: baseline (a) with only
// the function run by one long-lived worker goroutine, handed its input
// over a channel and answering over another, with no timer, no context
// and no goroutine started per call. ExecuteTyped's isolation cannot cost
// less than this handoff on the same machine.
func BenchmarkHandoffFloor(b *testing.B) {
	type job struct {
		in  searchArgs
		out searchResult
		err error
	}
	jobs, answers := make(chan *job), make(chan *job)
	go func() {
		for j := range jobs {
			j.out, j.err = searchFlights(context.Background(), j.in)
			answers <- j
		}
	}()
	defer close(jobs)
	var j job
	compare(b, baseline, func() {
		if err := json.Unmarshal(searchInput, &j.in); err != nil {
			b.Fatal(err)
		}
		jobs <- &j
		a := <-answers
		if a.err != nil {
			b.Fatal(a.err)
		}
		if _, err := json.Marshal(a.out); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkNew measures building the typed tool: schema inference,
// decoder compilation and rendering. The baseline is one baseline call.
// The caches New keeps by type across calls (the hook interfaces a type
// implements, the nodes of named scalar types, compiled pattern tags) are
// warm here after the first iteration, as they are for every tool after
// the first of a program that uses those types; the struct types
// themselves are walked, and their schemas built and rendered, on every
// call: nothing of a struct type is kept from one New to the next.
func BenchmarkNew(b *testing.B) {
	compare(b, baseline, func() {
		if _, err := tool.New("search_flights", "Searches flights.", searchFlights); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkDefinitions exports 1,000 tools after one of them changed,
// against the floor: each tool's OpenAI definition rendered once, the
// changed one rendered again, and the parts joined into a new array. The
// target re-registers the changed tool (built once, as a reload would
// have it) and exports; both sides re-render one definition per change.
func BenchmarkDefinitions(b *testing.B) {
	// Quiet: each replacement below logs a warning, which would break the
	// benchmark's output lines.
	r := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type definition struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	var tools []tool.Tool
	parts := make([][]byte, 1000)
	for i := range 1000 {
		t := tool.Must(tool.New(fmt.Sprintf("tool_%04d", i), "Searches flights for a given route and date.", searchFlights))
		r.Register(t)
		tools = append(tools, t)
		parts[i], _ = json.Marshal(definition{"function", function{t.Name(), t.Description(), t.Parameters()}})
	}
	changed := tools[0]
	var out []byte
	compare(b, func() {
		p, err := json.Marshal(definition{"function", function{changed.Name(), changed.Description(), changed.Parameters()}})
		if err != nil {
			b.Fatal(err)
		}
		parts[0] = p
		// A new slice each time, as Definitions returns one its caller
		// owns: sized once, each part copied once.
		n := 2
		for _, p := range parts {
			n += len(p) + 1
		}
		out = append(make([]byte, 0, n), '[')
		for i, p := range parts {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, p...)
		}
		out = append(out, ']')
	}, func() {
		r.Register(changed) // a replacement: the registry's export is no longer current
		if len(r.Definitions()) == 0 {
			b.Fatal("empty")
		}
	})
	if len(out) == 0 {
		b.Fatal("empty floor")
	}
}

// BenchmarkExecuteTypedDirect calls the typed tool's own Execute, without
// the registry: strict parsing, validation, defaults and binding, the
// call and the encoding of the result, but no timeout context, no panic
// guard and no goroutine of its own. The difference from
// BenchmarkExecuteTyped is the price of those guarantees.
func BenchmarkExecuteTypedDirect(b *testing.B) {
	t := tool.Must(tool.New("search_flights", "Searches flights.", searchFlights))
	ctx := context.Background()
	compare(b, baseline, func() {
		if res, _ := t.Execute(ctx, searchInput); res.IsError {
			b.Fatal(res.Error)
		}
	})
}

// coldSerial numbers the types BenchmarkNewCold makes, across its runs.
var coldSerial int

// BenchmarkNewCold is BenchmarkNew with nothing warm: each iteration
// builds the schemas and decoder of a pair of struct types no New has
// seen (made with reflect.StructOf, outside the timed part), whose
// pattern tags are text no New has compiled either. It calls what New
// calls for its types (schema.For for the arguments and the result), so
// it is the first New of a program's tool; BenchmarkNew is every later
// one of types whose fields are already known. Run with a fixed
// -benchtime: each iteration leaves two types behind for good.
func BenchmarkNewCold(b *testing.B) {
	fresh := func(t reflect.Type, k int) reflect.Type {
		fields := make([]reflect.StructField, t.NumField())
		for i := range fields {
			f := t.Field(i)
			tag := string(f.Tag)
			if p, ok := f.Tag.Lookup("pattern"); ok {
				// The same strings but one, in text no New has seen.
				tag = strings.Replace(tag, p, fmt.Sprintf("%s|^k%d$", p, k), 1)
			}
			if i == 0 {
				tag += fmt.Sprintf(` title:"t%d"`, k) // a type of its own
			}
			fields[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: reflect.StructTag(tag)}
		}
		return reflect.StructOf(fields)
	}
	ins, outs := make([]reflect.Type, b.N), make([]reflect.Type, b.N)
	for i := range b.N {
		coldSerial++ // not i: each run of the benchmark (-count) needs types of its own
		ins[i], outs[i] = fresh(reflect.TypeFor[searchArgs](), coldSerial), fresh(reflect.TypeFor[searchResult](), coldSerial)
	}
	i := 0
	compare(b, baseline, func() {
		if _, err := schema.For(ins[i], false); err != nil {
			b.Fatal(err)
		}
		if _, err := schema.For(outs[i], true); err != nil {
			b.Fatal(err)
		}
		i++
	})
}
