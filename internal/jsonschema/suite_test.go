package jsonschema

import (
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// suiteDir holds the vendored JSON-Schema-Test-Suite (see its README.md).
const suiteDir = "testdata/JSON-Schema-Test-Suite"

// suiteRequired is the number of required draft 2020-12 tests at the
// vendored commit.
const suiteRequired = 1299

// suiteResources registers the suite's remotes/ under the URIs the tests
// name (http://localhost:1234/...), as a host registers schemas in
// advance: nothing is fetched.
func suiteResources(t *testing.T) *Resources {
	t.Helper()
	r := &Resources{}
	root := filepath.Join(suiteDir, "remotes")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		// Only the draft 2020-12 remotes and the draft-neutral ones.
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); strings.HasPrefix(first, "draft") && first != "draft2020-12" || first == "v1" {
			return nil
		}
		doc, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return r.Add("http://localhost:1234/"+path.Clean(filepath.ToSlash(rel)), doc)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// TestOfficialSuite runs every required draft 2020-12 test of the official
// JSON-Schema-Test-Suite through CompileWith with the options for
// schemas from elsewhere (formats are annotations) and Validate, and
// counts the passes.
func TestOfficialSuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(suiteDir, "tests", "draft2020-12", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no suite files: %v", err)
	}
	res := suiteResources(t)
	total, passed := 0, 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var groups []suiteGroup
		if err := json.Unmarshal(data, &groups); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, g := range groups {
			s, cerr := CompileWith(g.Schema, Options{Resources: res})
			for _, tc := range g.Tests {
				total++
				where := name + ": " + g.Description + ": " + tc.Description
				if cerr != nil {
					t.Errorf("%s: Compile: %v", where, cerr)
					continue
				}
				_, vs, err := s.Validate(tc.Data, Limits{})
				if err != nil {
					t.Errorf("%s: Validate: %v", where, err)
					continue
				}
				if got := len(vs) == 0; got != tc.Valid {
					t.Errorf("%s: valid %v, want %v (violations %v)", where, got, tc.Valid, vs)
					continue
				}
				passed++
			}
		}
	}
	t.Logf("official suite, draft 2020-12 required tests: %d of %d pass", passed, total)
	if total != suiteRequired {
		t.Errorf("the suite has %d required tests, want %d: update suiteRequired with the vendored commit", total, suiteRequired)
	}
}
