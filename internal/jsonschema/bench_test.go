package jsonschema

import (
	"encoding/json"
	"testing"
	"time"
)

// The search_flights workload of the performance anchors: its schema, a
// valid call, and the baseline of decoding that call into a generic map.

// BenchmarkValidateFlights validates the search_flights call and reports
// its cost as a ratio to encoding/json's Unmarshal of the same bytes into
// map[string]any, measured in the same run ("x-unmarshal").
func BenchmarkValidateFlights(b *testing.B) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(flightsInput)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		_, vs, err := s.Validate(data, Limits{MaxBytes: 1 << 20})
		if err != nil || len(vs) != 0 {
			b.Fatal(err, vs)
		}
	}
	reportRatio(b, start, data)
}

// BenchmarkValidateFlightsInvalid measures the error path: seven
// violations, messages included.
func BenchmarkValidateFlightsInvalid(b *testing.B) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"from":"sfo","to":"JFK","date":"2026-13-24","passengers":12,"cabin":"premium","rm":true,"Airlines":["UA"]}`)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, vs, _ := s.Validate(data, Limits{}); len(vs) == 0 {
			b.Fatal("no violations")
		}
	}
	reportRatio(b, start, data)
}

// BenchmarkCompileFlights measures compiling the search_flights schema,
// as the registry does once per hand-written tool, as a ratio to one
// Unmarshal of the schema into map[string]any.
func BenchmarkCompileFlights(b *testing.B) {
	doc := []byte(flightsSchema)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := Compile(doc); err != nil {
			b.Fatal(err)
		}
	}
	reportRatio(b, start, doc)
}

// reportRatio stops the timer, runs the baseline (encoding/json Unmarshal
// of data into map[string]any) b.N times, and reports the time per
// operation measured since start as a ratio to it ("x-unmarshal"). The
// baseline runs with the timer stopped, so it does not count in ns/op or
// allocs/op.
func reportRatio(b *testing.B, start time.Time, data []byte) {
	b.Helper()
	per := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	b.StopTimer()
	t0 := time.Now()
	for range b.N {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
	base := float64(time.Since(t0).Nanoseconds()) / float64(b.N)
	b.ReportMetric(base, "baseline-ns/op")
	b.ReportMetric(per/base, "x-unmarshal")
}
