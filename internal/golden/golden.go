// Package golden compares what a test produces with a golden file under
// testdata/, and rewrites the file instead when the tests run with
// -update. Tests across the module use it, among them the provider
// adapters', whose goldens are the JSON they send and read, and what
// becomes of the calls they parse when a registry runs them ([RunCalls]).
//
// Importing it registers the -update flag, so a test package that uses it
// must not register a flag of that name itself.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether the tests run with -update, for tests that
// keep their goldens in a form of their own (txtar archives, say).
func Updating() bool { return *update }

// JSON compares v, encoded as JSON indented by two spaces and ended by a
// newline, with testdata/name.golden.json, as [File] does. A value that
// cannot be encoded stops the test with t.Fatal.
func JSON(t testing.TB, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	File(t, filepath.Join("testdata", name+".golden.json"), append(got, '\n'))
}

// File compares got with the file at path and reports a difference with
// t.Errorf. With -update it writes the file (and its directory) instead.
// A golden file that cannot be read or written stops the test with
// t.Fatal.
func File(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
