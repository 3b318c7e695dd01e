package tool_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// searchArgs is the workload of shared/research/perf-anchors.md.
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
// chunks so that both see the same machine load, and reports target's
// time per call as ns/op, the baseline's as baseline-ns/op and their ratio
// as x-baseline. Allocations reported are the target's.
func compare(b *testing.B, baseline, target func()) {
	b.Helper()
	const chunk = 64
	var base, tgt time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		start := time.Now()
		for range n {
			baseline()
		}
		base += time.Since(start)
		b.StartTimer()
		start = time.Now()
		for range n {
			target()
		}
		tgt += time.Since(start)
		b.StopTimer()
	}
	b.ReportMetric(float64(tgt.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(tgt)/float64(base), "x-baseline")
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
