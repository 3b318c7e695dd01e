package jsontext

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestFoldNameMatchesEncodingJSON checks FoldName and EqualFoldName
// against what encoding/json actually does: it binds a key to the field
// named name when the two fold alike.
func TestFoldNameMatchesEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		field, key string
		binds      bool
	}{
		{"host", "host", true},
		{"host", "HOST", true},
		{"host", "ho\u017ft", true},    // ſ LATIN SMALL LETTER LONG S folds to s
		{"key", "\u212aey", true},      // K KELVIN SIGN folds to k
		{"size", "\u017fize", true},    // two bytes for one
		{"ab", "\u212a", false},        // three bytes, one letter
		{"angstrom", "angstrom", true}, // ASCII
		{"\u00e5", "\u212b", true},     // Å ANGSTROM SIGN folds to å
		{"\u00e5", "\u00c5", true},     // Å
		{"\u03c9", "\u2126", true},     // Ω OHM SIGN folds to ω
		{"\u03c3", "\u03c2", true},     // final sigma
		{"\u03b8", "\u03d1", true},     // ϑ theta symbol
		{"\u00b5", "\u03bc", true},     // micro sign and mu
		{"\u1e9e", "\u00df", true},     // capital and small sharp s fold together
		{"ss", "\u00df", false},        // simple folding only: ß is not "ss"
		{"i", "\u0130", false},         // dotted capital I folds to nothing ASCII
		{"i", "\u0131", false},         // dotless i
		{"hosts", "host", false},
		{"ho_st", "host", false},
	} {
		got := bindsTo(t, tc.field, tc.key)
		if got != tc.binds {
			t.Errorf("encoding/json binds %q to field %q = %v, want %v (test table is wrong)", tc.key, tc.field, got, tc.binds)
		}
		fold := string(FoldName(nil, []byte(tc.field))) == string(FoldName(nil, []byte(tc.key)))
		if fold != tc.binds {
			t.Errorf("FoldName(%q) == FoldName(%q) is %v, want %v", tc.field, tc.key, fold, tc.binds)
		}
		if eq := EqualFoldName([]byte(tc.field), []byte(tc.key)); eq != tc.binds {
			t.Errorf("EqualFoldName(%q, %q) = %v, want %v", tc.field, tc.key, eq, tc.binds)
		}
	}
}

// bindsTo reports whether encoding/json sets a string field tagged with
// name from the member key of a JSON object.
func bindsTo(t *testing.T, name, key string) bool {
	t.Helper()
	typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + name + `"`)}})
	v := reflect.New(typ)
	data, _ := json.Marshal(map[string]string{key: "set"})
	if err := json.Unmarshal(data, v.Interface()); err != nil {
		t.Fatal(err)
	}
	return v.Elem().Field(0).String() == "set"
}

// TestFoldNameEveryRune checks every character against encoding/json's
// matching of a one-character field name.
func TestFoldNameEveryRune(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) || unicode.SimpleFold(r) == r {
			continue
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			a, b := string(r), string(f)
			if !EqualFoldName([]byte(a), []byte(b)) || string(FoldName(nil, []byte(a))) != string(FoldName(nil, []byte(b))) {
				t.Errorf("%U and %U do not fold alike", r, f)
			}
		}
	}
}

// FuzzFoldName checks EqualFoldName against FoldName, and both against
// encoding/json binding a key to a field of that name.
func FuzzFoldName(f *testing.F) {
	for _, seed := range [][2]string{{"host", "ho\u017ft"}, {"key", "\u212aey"}, {"\u00e5", "\u212b"}, {"ss", "\u00df"}, {"A", "a"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, key string) {
		if !utf8.ValidString(name) || !utf8.ValidString(key) {
			return
		}
		eq := EqualFoldName([]byte(name), []byte(key))
		if fold := string(FoldName(nil, []byte(name))) == string(FoldName(nil, []byte(key))); fold != eq {
			t.Fatalf("EqualFoldName(%q, %q) = %v, FoldName equal = %v", name, key, eq, fold)
		}
		for _, r := range name {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) { // keep to names encoding/json takes as tags
				return
			}
		}
		if name == "" || name == key {
			return
		}
		if binds := bindsTo(t, name, key); binds != eq {
			t.Fatalf("encoding/json binds %q to %q: %v; EqualFoldName says %v", key, name, binds, eq)
		}
	})
}
