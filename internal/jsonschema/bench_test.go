package jsonschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The search_flights benchmark workload: its schema, a
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
	ratioLoop(b, data, func() {
		_, vs, err := s.Validate(data, Limits{MaxBytes: 1 << 20})
		if err != nil || len(vs) != 0 {
			b.Fatal(err, vs)
		}
	})
}

// BenchmarkValidateFlightsInvalid measures the error path: six
// violations, messages and hints included.
func BenchmarkValidateFlightsInvalid(b *testing.B) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"from":"sfo","to":"JFK","date":"2026-13-24","passengers":12,"cabin":"premium","rm":true,"Airlines":["UA"]}`)
	ratioLoop(b, data, func() {
		if _, vs, _ := s.Validate(data, Limits{}); len(vs) == 0 {
			b.Fatal("no violations")
		}
	})
}

// BenchmarkCompileFlights measures compiling the search_flights schema,
// as the registry does once per hand-written tool, as a ratio to one
// Unmarshal of the schema into map[string]any.
func BenchmarkCompileFlights(b *testing.B) {
	doc := []byte(flightsSchema)
	ratioLoop(b, doc, func() {
		if _, err := Compile(doc); err != nil {
			b.Fatal(err)
		}
	})
}

// ratioLoop runs f b.N times and reports, besides ns/op, the ratio of its
// time to that of the baseline, encoding/json Unmarshal of data into
// map[string]any ("x-unmarshal"). The two alternate in blocks so that
// both see the same machine load; the baseline runs with the timer
// stopped, so it counts in neither ns/op nor allocs/op.
func ratioLoop(b *testing.B, data []byte, f func()) {
	b.Helper()
	ratioLoopTo(b, "x-unmarshal", f, func() {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkValidateHostile validates instances built to be expensive, as
// a ratio to encoding/json's Valid on the same bytes ("x-valid"): the
// ratio stays small because the work is linear in the input or stopped
// by the work budget.
func BenchmarkValidateHostile(b *testing.B) {
	long := "7" + strings.Repeat("1234567", 1<<20/7) + ".7"
	var patterns, keys strings.Builder
	patterns.WriteString(`{"type":"object","patternProperties":{`)
	keys.WriteString(`{`)
	for i := range 1000 {
		if i > 0 {
			patterns.WriteString(",")
		}
		fmt.Fprintf(&patterns, `"^p%d$":{"type":"integer"}`, i)
	}
	for i := range 20000 {
		if i > 0 {
			keys.WriteString(",")
		}
		fmt.Fprintf(&keys, `"k%d":0`, i)
	}
	patterns.WriteString(`}}`)
	keys.WriteString(`}`)
	for _, bc := range []struct{ name, schema, instance string }{
		{"multipleOf_1MB_number", `{"multipleOf":0.7}`, long},
		{"1000_patterns_x_20000_keys", patterns.String(), keys.String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Compile([]byte(bc.schema))
			if err != nil {
				b.Fatal(err)
			}
			data := []byte(bc.instance)
			ratioLoopTo(b, "x-valid", func() {
				if _, _, err := s.Validate(data, Limits{}); err != nil && err != ErrTooComplex {
					b.Fatal(err)
				}
			}, func() {
				if !json.Valid(data) {
					b.Fatal("invalid")
				}
			})
		})
	}
}

// ratioLoopTo is ratioLoop with the baseline given, reported as metric.
func ratioLoopTo(b *testing.B, metric string, f, baseline func()) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	var spent, base time.Duration
	for done := 0; done < b.N; {
		n := min(b.N-done, 512)
		t0 := time.Now()
		for range n {
			f()
		}
		spent += time.Since(t0)
		b.StopTimer()
		t0 = time.Now()
		for range n {
			baseline()
		}
		base += time.Since(t0)
		b.StartTimer()
		done += n
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(spent)/float64(base), metric)
}
