package tool_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tool "github.com/miniopenclaw/tool"
)

// bigBoundDigits is the bound a typed tool puts on the text it decodes
// into a math/big value (internal/schema.MaxBigNumberText).
const bigBoundDigits = 10_000

// TestBigNumberTextBounded: a typed tool's *big.Int, *big.Float and
// *big.Rat fields were converted from whatever text the model sent, and
// math/big's decimal conversion costs more than linear work (a million
// digits took 1.5 s of CPU per call; a big.Rat expands "1e999999" into a
// million digits from 10 bytes). The attack is refused as
// invalid_arguments naming the field and the bound, and the function does
// not run. Controls: math/big itself takes text past the bound (so
// without the bound the decoder hands the attack to the conversion), and
// a number of exactly the bound's digits decodes whole.
func TestBigNumberTextBounded(t *testing.T) {
	type Embedded struct{ big.Int }
	type In struct {
		I *big.Int   `json:"i,omitempty"`
		F *big.Float `json:"f,omitempty"`
		R *big.Rat   `json:"r,omitempty"`
		L []big.Int  `json:"l,omitempty"`
		E *Embedded  `json:"e,omitempty"`
	}
	var ran atomic.Int32
	var got In
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Must(tool.New("big", "Takes big numbers.", func(_ context.Context, in In) (string, error) {
		ran.Add(1)
		got = in
		return "ok", nil
	}))); err != nil {
		t.Fatal(err)
	}
	million := strings.Repeat("7", 1_000_000)
	past := million[:2*bigBoundDigits] // the controls' text: past the bound, cheap to convert
	for _, c := range []struct {
		name, args, field, bound string
		control                  func() bool // math/big takes such text
	}{
		{"int", `{"i":` + million + `}`, "/i", "10000 digits",
			func() bool { return new(big.Int).UnmarshalJSON([]byte(past)) == nil }},
		{"float", `{"f":"` + million + `"}`, "/f", "10000 digits",
			func() bool { return new(big.Float).UnmarshalText([]byte(past)) == nil }},
		{"rat", `{"r":"` + million + `"}`, "/r", "10000 digits",
			func() bool { return new(big.Rat).UnmarshalText([]byte(past)) == nil }},
		{"rat fraction", `{"r":"1/` + million + `"}`, "/r", "10000 digits",
			func() bool { return new(big.Rat).UnmarshalText([]byte("1/"+past)) == nil }},
		{"rat exponent", `{"r":"1e999999"}`, "/r", "exponent is at most 10000",
			func() bool { return new(big.Rat).UnmarshalText([]byte("1e999999")) == nil }},
		{"rat escaped exponent", `{"r":"1\u0065999999"}`, "/r", "exponent is at most 10000",
			func() bool { return new(big.Rat).UnmarshalText([]byte("1e999999")) == nil }},
		{"rat binary exponent", `{"r":"0x1p-999999"}`, "/r", "exponent is at most 10000",
			func() bool { return new(big.Rat).UnmarshalText([]byte("0x1p-999999")) == nil }},
		{"slice element", `{"l":[1,` + million + `]}`, "/l/1", "10000 digits",
			func() bool { return new(big.Int).UnmarshalJSON([]byte(past)) == nil }},
		{"embedded", `{"e":` + million + `}`, "/e", "10000 digits",
			func() bool { return new(big.Int).UnmarshalJSON([]byte(past)) == nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.control() {
				t.Fatal("control: math/big refuses the attack text itself")
			}
			ran.Store(0)
			res := reg.Execute(context.Background(), "big", []byte(c.args))
			if res.Kind != tool.KindInvalidArguments || ran.Load() != 0 {
				t.Fatalf("kind %q, ran %d times: %.300s", res.Kind, ran.Load(), res.Text())
			}
			if !strings.Contains(res.Error, c.field) || !strings.Contains(res.Error, c.bound) {
				t.Errorf("the error names neither the field %s nor the bound %q: %.400s", c.field, c.bound, res.Error)
			}
		})
	}
	// At the bound, the number decodes whole.
	edge := "9" + strings.Repeat("8", bigBoundDigits-1)
	for _, args := range []string{`{"i":` + edge + `}`, `{"r":"1e` + "10000" + `"}`, `{"f":"` + edge[:bigBoundDigits-2] + `"}`} {
		ran.Store(0)
		got = In{}
		if res := reg.Execute(context.Background(), "big", []byte(args)); res.IsError || ran.Load() != 1 {
			t.Fatalf("control at the bound: %.300s", res.Text())
		}
	}
	ran.Store(0)
	reg.Execute(context.Background(), "big", []byte(`{"i":`+edge+`}`))
	if got.I == nil || got.I.String() != edge {
		t.Errorf("the number at the bound did not decode whole")
	}
}

// TestTagPatternsCharged: a typed tool's pattern tags were matched with no
// work budget, though a hand-written schema's patterns are charged by
// their program's size: the tag pattern:"[a-z]{1000}!" (a program of
// thousands of instructions) matched against 1 MB of a model's letters
// ran for more than ten minutes. The match is now charged as a schema's
// is, within the budget Validate allows for arguments of that size, and
// past it the call is refused as invalid_arguments saying why; a tag whose
// program would pass 16,384 instructions is refused by New. Controls: the
// same pattern in a hand-written schema is refused the same way (the rule
// the tags now follow), the expensive tag still checks short strings, and
// a cheap tag checks the whole megabyte.
func TestTagPatternsCharged(t *testing.T) {
	type One struct {
		S string `json:"s" pattern:"[a-z]{1000}!"`
	}
	type Item struct {
		S string `json:"s" pattern:"[a-z]{1000}!"`
	}
	type Many struct {
		S []Item `json:"s"`
	}
	type Cheap struct {
		S string `json:"s" pattern:"^[a-z]+$"`
	}
	var ran atomic.Int32
	schemaTool := newRaw("schema", `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]{1000}!"}}}`)
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		tool.Must(tool.New("one", "One string.", func(_ context.Context, in One) (string, error) { ran.Add(1); return "ok", nil })),
		tool.Must(tool.New("many", "Many strings.", func(_ context.Context, in Many) (string, error) { ran.Add(1); return "ok", nil })),
		tool.Must(tool.New("cheap", "A cheap pattern.", func(_ context.Context, in Cheap) (string, error) { ran.Add(1); return "ok", nil })),
		schemaTool,
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	letters := strings.Repeat("a", 1<<20-16)
	// Each item matches: nothing is refused but the work.
	many := `{"s":[` + strings.Repeat(`{"s":"`+strings.Repeat("a", 2000)+`!"},`, 500) + `{"s":"` + strings.Repeat("a", 1000) + `!"}]}`
	for _, c := range []struct{ name, tool, args string }{
		{"one string", "one", `{"s":"` + letters + `"}`},
		{"many strings", "many", many},
		{"control: the schema's pattern", "schema", `{"s":"` + letters + `"}`},
	} {
		ran.Store(0)
		res := reg.Execute(context.Background(), c.tool, []byte(c.args))
		if res.Kind != tool.KindInvalidArguments || ran.Load() != 0 || schemaTool.calls != 0 {
			t.Fatalf("%s: kind %q, ran %d times: %.300s", c.name, res.Kind, ran.Load(), res.Text())
		}
		if !strings.Contains(res.Error, "work limit") {
			t.Errorf("%s: the error does not say the work limit refused it: %.400s", c.name, res.Error)
		}
	}
	for _, c := range []struct {
		tool, args string
		ok         bool
	}{
		{"one", `{"s":"` + strings.Repeat("b", 1000) + `!"}`, true},
		{"one", `{"s":"` + strings.Repeat("b", 999) + `!"}`, false},
		{"many", `{"s":[{"s":"` + strings.Repeat("b", 1000) + `!"}]}`, true},
		{"cheap", `{"s":"` + letters + `"}`, true},
	} {
		ran.Store(0)
		res := reg.Execute(context.Background(), c.tool, []byte(c.args))
		if res.IsError == c.ok || (ran.Load() == 1) != c.ok {
			t.Errorf("control %s (%d bytes): want ok=%v, got %.300s", c.tool, len(c.args), c.ok, res.Text())
		}
	}
	// A tag whose program would be too large is refused by New.
	type Huge struct {
		S string `json:"s" pattern:"[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}[a-z]{1000}"`
	}
	_, err := tool.New("huge", "A huge pattern.", func(_ context.Context, in Huge) (string, error) { return "", nil })
	if !errors.Is(err, tool.ErrInvalidSchema) || !strings.Contains(err.Error(), "16384 instructions") {
		t.Errorf("New with a pattern of a huge program: %v", err)
	}
}

// TestMisfitKeywordTagsRefused: a keyword tag on a field whose kind it
// does not apply to was dropped without a word: pattern:"^[a-z]+$" on a
// []string checked none of its strings, so a tool that trusted it got
// "../../etc/passwd" from the model; minimum on a string, maxLength on a
// number, format on a []string, maxItems on a map were dropped alike.
// New now refuses such a tool naming the field and the tag. Control: the
// same tag on a string field refuses the same argument, and the attack
// ran before (the first subtest is the attack as it was: it must now fail
// at New).
func TestMisfitKeywordTagsRefused(t *testing.T) {
	type Paths struct {
		Paths []string `json:"paths" pattern:"^[a-z]+$"`
	}
	_, err := tool.New("read", "Reads files.", func(_ context.Context, in Paths) (string, error) { return "read", nil })
	if !errors.Is(err, tool.ErrInvalidSchema) || !strings.Contains(err.Error(), "Paths") || !strings.Contains(err.Error(), "pattern tag does not apply") {
		t.Fatalf("a pattern tag on a []string: New = %v, want ErrInvalidSchema naming the field and the tag", err)
	}
	// Control: on a string, the tag refuses the model's path.
	type Path struct {
		Path string `json:"path" pattern:"^[a-z]+$"`
	}
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Must(tool.New("read", "Reads a file.", func(_ context.Context, in Path) (string, error) { return "read", nil }))); err != nil {
		t.Fatal(err)
	}
	if res := reg.Execute(context.Background(), "read", []byte(`{"path":"../../etc/passwd"}`)); res.Kind != tool.KindInvalidArguments {
		t.Fatalf("control: the pattern on a string did not refuse the path: %s", res.Text())
	}
	for _, c := range []struct {
		name string
		fn   func() error
		tag  string
	}{
		{"minimum on a string", func() error {
			type In struct {
				N string `json:"n" minimum:"1"`
			}
			_, err := tool.New("x", "d", func(_ context.Context, in In) (string, error) { return "", nil })
			return err
		}, "minimum"},
		{"maxLength on an int", func() error {
			type In struct {
				N *int `json:"n" maxLength:"3"`
			}
			_, err := tool.New("x", "d", func(_ context.Context, in In) (string, error) { return "", nil })
			return err
		}, "maxLength"},
		{"format on a []string", func() error {
			type In struct {
				E []string `json:"e" format:"email"`
			}
			_, err := tool.New("x", "d", func(_ context.Context, in In) (string, error) { return "", nil })
			return err
		}, "format"},
		{"maxItems on a map", func() error {
			type In struct {
				M map[string]int `json:"m" maxItems:"3"`
			}
			_, err := tool.New("x", "d", func(_ context.Context, in In) (string, error) { return "", nil })
			return err
		}, "maxItems"},
		{"maxLength on a big.Int", func() error {
			type In struct {
				I *big.Int `json:"i" maxLength:"30"`
			}
			_, err := tool.New("x", "d", func(_ context.Context, in In) (string, error) { return "", nil })
			return err
		}, "maxLength"},
	} {
		if err := c.fn(); !errors.Is(err, tool.ErrInvalidSchema) || !strings.Contains(err.Error(), "the "+c.tag+" tag does not apply") {
			t.Errorf("%s: New = %v, want ErrInvalidSchema naming the tag", c.name, err)
		}
	}
	// A date-time format on a time.Time says what the type says already.
	type When struct {
		At time.Time `json:"at" format:"date-time"`
	}
	if _, err := tool.New("x", "d", func(_ context.Context, in When) (string, error) { return "", nil }); err != nil {
		t.Errorf("format date-time on a time.Time: %v", err)
	}
}

// recursiveUnique is a recursive argument type whose arrays must hold
// unique items at every level.
type recursiveUnique struct {
	Kids []recursiveUnique `json:"kids" uniqueItems:"true"`
	Tags []string          `json:"tags,omitempty"`
}

// TestUniqueItemsChargedPerLevel: a typed tool's uniqueItems decodes each
// array's items as values to compare them, and a recursive type's nested
// arrays were decoded again at every level with no work budget: 31
// levels around 900 KB of strings took 2.4 s of CPU (0.2 s at one
// level). The bytes compared are now charged to the decoder's work
// budget, and past it the call is refused as invalid_arguments saying
// why. Controls: the same megabyte one level deep is checked (and its
// duplicates found), and with the charge the work is the budget's, not
// the depth's: the control's count of bytes compared is what the budget
// refuses.
func TestUniqueItemsChargedPerLevel(t *testing.T) {
	var ran atomic.Int32
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Must(tool.New("tree", "Takes a tree.", func(_ context.Context, in recursiveUnique) (string, error) {
		ran.Add(1)
		return "ok", nil
	}))); err != nil {
		t.Fatal(err)
	}
	const depth = 31 // 62 levels of JSON, within the default depth of 64
	leaf := `{"kids":[],"tags":[` + strings.Repeat(`"",`, 300_000) + `""]}`
	deep := strings.Repeat(`{"kids":[`, depth) + leaf + strings.Repeat(`]}`, depth)
	// Control: the bytes compared without the charge, depth times the
	// leaf, pass what 1 MiB of arguments may cost (2^20 + 16 steps a byte)
	// at the charge of a byte.
	if compared, budget := depth*len(leaf)*8, 1<<20+16*len(deep); compared < budget {
		t.Fatalf("control: %d steps of comparing within a budget of %d", compared, budget)
	}
	res := reg.Execute(context.Background(), "tree", []byte(deep))
	if res.Kind != tool.KindInvalidArguments || ran.Load() != 0 || !strings.Contains(res.Error, "work limit") {
		t.Fatalf("deep unique arrays: kind %q, ran %d: %.300s", res.Kind, ran.Load(), res.Error)
	}
	ran.Store(0)
	if res := reg.Execute(context.Background(), "tree", []byte(`{"kids":[`+leaf+`]}`)); res.IsError || ran.Load() != 1 {
		t.Fatalf("control: one level: %.300s", res.Text())
	}
	half := leaf[:len(leaf)/2]
	half = half[:strings.LastIndex(half, `,`)] + `]}`
	if res := reg.Execute(context.Background(), "tree", []byte(`{"kids":[`+half+`,`+half+`]}`)); res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "items 0 and 1 are equal") {
		t.Fatalf("control: duplicates one level down: %.300s", res.Error)
	}
}

// TestRegexpFieldProgramBounded: a typed tool's *regexp.Regexp field
// compiled the model's text as it came: within 800 bytes, \pL{999}
// repeated 100 times is a program of hundreds of thousands of
// instructions, built (45 ms, megabytes) and handed to the function, which
// then pays for each byte it matches with each of them. The program is
// now estimated before it is built, as a schema's pattern is, and past
// 16,384 instructions the call is refused as invalid_arguments naming the
// field. Controls: regexp itself compiles the attack, and an ordinary
// pattern decodes.
func TestRegexpFieldProgramBounded(t *testing.T) {
	type Embedded struct{ regexp.Regexp }
	type In struct {
		Re *regexp.Regexp `json:"re,omitempty"`
		E  *Embedded      `json:"e,omitempty"`
	}
	var ran atomic.Int32
	var got In
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Must(tool.New("search", "Searches with a pattern.", func(_ context.Context, in In) (string, error) {
		ran.Add(1)
		got = in
		return "ok", nil
	}))); err != nil {
		t.Fatal(err)
	}
	attack := strings.Repeat(`\\pL{999}`, 100)
	if _, err := regexp.Compile(strings.ReplaceAll(attack, `\\`, `\`)); err != nil {
		t.Fatalf("control: regexp refuses the attack itself: %v", err)
	}
	for _, field := range []string{"re", "e"} {
		ran.Store(0)
		res := reg.Execute(context.Background(), "search", []byte(`{"`+field+`":"`+attack+`"}`))
		if res.Kind != tool.KindInvalidArguments || ran.Load() != 0 || !strings.Contains(res.Error, "/"+field) || !strings.Contains(res.Error, "16384 instructions") {
			t.Errorf("%s: kind %q, ran %d: %.300s", field, res.Kind, ran.Load(), res.Error)
		}
	}
	if res := reg.Execute(context.Background(), "search", []byte(`{"re":"^[a-z]{3,64}\\.go$"}`)); res.IsError || got.Re == nil || !got.Re.MatchString("main.go") {
		t.Errorf("control: an ordinary pattern: %.300s", res.Text())
	}
}

// manyZones is a named string type with a long list of values, as a time
// zone or a currency is.
type manyZones string

// Enum lists 600 values.
func (manyZones) Enum() []any {
	out := make([]any, 600)
	for i := range out {
		out[i] = fmt.Sprintf("Region/City_Number_%03d", i)
	}
	return out
}

// oneZone is manyZones with one value.
type oneZone string

// Enum lists one value.
func (oneZone) Enum() []any { return []any{"Region/City_Number_000"} }

// TestViolationsPastTheListAreNotDescribed: a typed tool lists 20
// violations and counts the rest, but described what each value should
// have been before it knew whether the violation would be listed: an
// array of 250,000 empty strings for a type of 600 enum values built the
// list of 600 values (and looked for a close one among them) 250,000
// times, 487 MiB and 1.2 s for 750 KB of arguments. Now a violation is
// described only when it is listed. The control is the same arguments
// against a type of one value: the attack must cost no more than a few
// times it, counted in bytes allocated, never time.
func TestViolationsPastTheListAreNotDescribed(t *testing.T) {
	type Many struct {
		Z []manyZones `json:"z"`
	}
	type One struct {
		Z []oneZone `json:"z"`
	}
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		tool.Must(tool.New("many", "Many zones.", func(_ context.Context, in Many) (string, error) { return "ok", nil })),
		tool.Must(tool.New("one", "One zone.", func(_ context.Context, in One) (string, error) { return "ok", nil })),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	args := []byte(`{"z":[` + strings.Repeat(`"",`, 250_000) + `""]}`)
	allocated := func(name string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := reg.Execute(context.Background(), name, args)
		runtime.ReadMemStats(&after)
		if res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "(21 problems)") {
			t.Fatalf("%s: %s", name, res.Error[max(0, len(res.Error)-600):])
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	one, many := allocated("one"), allocated("many")
	if many > 3*one+(4<<20) {
		t.Errorf("250,000 values outside an enum of 600 allocated %d MiB, %d MiB against an enum of one", many>>20, one>>20)
	}
}
