package wasm

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// tiny assembles a module that exports a _start doing nothing, with the
// body of its one function and the given sections besides the type,
// function, export and code sections. Sections are placed in the order
// the binary format requires; custom sections go last.
func tiny(body []byte, sections map[byte][]byte) []byte {
	types := vec(cat([]byte{0x60}, vec(), vec()))
	code := cat(vec(), body, end)
	if body == nil {
		code = cat(vec(), end)
	}
	own := map[byte][]byte{
		1:  types,
		3:  vec(uleb(0)),
		7:  vec(cat(name("_start"), []byte{0x00, 0x00})),
		10: vec(cat(uleb(uint64(len(code))), code)),
	}
	for id, s := range sections {
		if id == 10 {
			own[10] = s
			continue
		}
		own[id] = s
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, id := range []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 10, 11, 0} {
		if s, ok := own[id]; ok {
			out = append(out, section(id, s)...)
		}
	}
	return out
}

// rawSection is a section whose declared size is size, whatever follows.
func rawSection(id byte, size uint64, content []byte) []byte {
	return cat([]byte{id}, uleb(size), content)
}

// tables is a table section of n funcref tables of size elements each,
// with a maximum unless noMax.
func tables(n int, size uint64, noMax bool) []byte {
	var ts [][]byte
	for range n {
		if noMax {
			ts = append(ts, cat([]byte{0x70, 0x00}, uleb(size)))
		} else {
			ts = append(ts, cat([]byte{0x70, 0x01}, uleb(size), uleb(size)))
		}
	}
	return vec(ts...)
}

// localsBody is a code section of one function declaring n i32 locals.
func localsCode(n uint64) []byte {
	code := cat(vec(cat(uleb(n), []byte{0x7f})), end)
	return vec(cat(uleb(uint64(len(code))), code))
}

// hostAlloc returns the bytes the Go heap allocated while fn ran.
func hostAlloc(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestModuleLimits is the attack of issue 25 and its relatives: tiny
// modules that each make the host allocate far more than their size,
// through one vector, at a memory limit of 16 pages (1 MiB). Each is
// refused before it runs, with an error naming the limit, and the host
// allocates little doing so; each control, the same vector under the
// limit, compiles and runs. On main, the table attack made the host
// allocate 128 MiB, the locals one 100 MiB, the data, custom and vector
// ones hundreds.
func TestModuleLimits(t *testing.T) {
	const M = 1 << 20
	tests := []struct {
		name            string
		attack, control []byte
		want            string
	}{
		{"one large funcref table", tiny(nil, map[byte][]byte{4: tables(1, 16*M, false)}), tiny(nil, map[byte][]byte{4: tables(1, 1000, false)}),
			"table 0 may hold 16777216 elements"},
		{"many funcref tables", tiny(nil, map[byte][]byte{4: tables(8, 2*M, false)}), tiny(nil, map[byte][]byte{4: tables(8, 1000, false)}),
			"the tables together"},
		{"an imported table without a maximum", tiny(nil, map[byte][]byte{2: vec(cat(name("env"), name("t"), []byte{0x01}, []byte{0x70, 0x00}, uleb(10)))}), nil,
			"imported table 0 has no maximum"},
		{"an imported table", tiny(nil, map[byte][]byte{2: vec(cat(name("env"), name("t"), []byte{0x01}, []byte{0x70, 0x01}, uleb(16*M), uleb(16*M)))}), nil,
			"table 0 may hold 16777216 elements"},
		{"a hundred million locals", tiny(nil, map[byte][]byte{10: localsCode(100 * M)}), tiny(nil, map[byte][]byte{10: localsCode(100)}),
			"declares more than 65536 locals"},
		{"a data segment larger than the module", tiny(nil, map[byte][]byte{5: vec([]byte{0x00, 0x01}), 11: cat(uleb(1), []byte{0x01}, uleb(256*M))}),
			tiny(nil, map[byte][]byte{5: vec([]byte{0x00, 0x01}), 11: vec(cat([]byte{0x01}, uleb(4), []byte("data")))}),
			"268435456 bytes declared"},
		{"an element vector longer than its section", tiny(nil, map[byte][]byte{9: cat(uleb(1), []byte{0x01, 0x00}, uleb(4*M))}),
			tiny(nil, map[byte][]byte{9: vec(cat([]byte{0x01, 0x00}, vec(uleb(0), uleb(0), uleb(0))))}),
			"a vector of 4194304 entries declared"},
		{"a global vector longer than its section", tiny(nil, map[byte][]byte{6: uleb(4 * M)}),
			tiny(nil, map[byte][]byte{6: vec(cat([]byte{0x7f, 0x00}, i32(7), end))}),
			"a vector of 4194304 entries declared"},
		{"a function vector longer than its section", tiny(nil, map[byte][]byte{3: uleb(32 * M)}), nil,
			"a vector of 33554432 entries declared"},
		{"a type vector longer than its section", tiny(nil, map[byte][]byte{1: uleb(2 * M)}), nil,
			"a vector of 2097152 entries declared"},
		{"an export vector longer than its section", tiny(nil, map[byte][]byte{7: uleb(2 * M)}), nil,
			"a vector of 2097152 entries declared"},
		{"a custom section larger than the module", cat(tiny(nil, nil), rawSection(0, 256*M, name("x"))),
			cat(tiny(nil, nil), section(0, cat(name("x"), []byte("0123456789")))),
			"268435456 bytes declared"},
		{"a name map longer than its subsection", cat(tiny(nil, nil), section(0, cat(name("name"), []byte{0x01}, uleb(4), uleb(4*M)))),
			cat(tiny(nil, nil), section(0, cat(name("name"), []byte{0x01}, uleb(8), vec(cat(uleb(0), name("start")))))),
			"a vector of 4194304 entries declared"},
		{"memory above the page limit", tiny(nil, map[byte][]byte{5: vec(cat([]byte{0x00}, uleb(1000)))}), tiny(nil, map[byte][]byte{5: vec(cat([]byte{0x00}, uleb(16)))}),
			"memory 0 starts at 1000 pages; the limit is 16"},
	}
	ctx := context.Background()
	r := newRuntime(t, Options{MemoryPages: 16})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.control != nil {
				m, err := r.Compile(ctx, tt.control)
				if err != nil {
					t.Fatalf("control: %v", err)
				}
				if res, err := m.Run(ctx, Config{}); err != nil || !res.OK() {
					t.Fatalf("control: %v, %+v", err, res)
				}
			}
			var err error
			n := hostAlloc(func() {
				var m *Module
				if m, err = r.Compile(ctx, tt.attack); err == nil {
					m.Run(ctx, Config{})
				}
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "wasm: module refused: ") {
				t.Errorf("%d-byte module: Compile = %v, want a refusal with %q", len(tt.attack), err, tt.want)
			}
			if strings.Contains(tt.want, "limit") || strings.Contains(tt.want, "table") || strings.Contains(tt.want, "locals") {
				if !errors.Is(err, ErrModuleLimit) {
					t.Errorf("%v does not wrap ErrModuleLimit", err)
				}
			}
			if n > 4<<20 {
				t.Errorf("%d-byte module: the host allocated %d MiB refusing it", len(tt.attack), n>>20)
			}
		})
	}
}

// growTable is a module with one funcref table of 10 elements and no
// maximum, whose _start grows it by n elements and traps unless
// table.grow returned want (-1: refused; else the old size, 10).
func growTable(n, want int64) []byte {
	body := cat([]byte{0xd0, 0x70}, i32(n), []byte{0xfc, 0x0f, 0x00}, i32(want), []byte{0x47, 0x04, 0x40, 0x00, 0x0b})
	return tiny(body, map[byte][]byte{4: tables(1, 10, true)})
}

// TestTableWithoutMaximum is the attack on a table the module declares
// without a maximum (the go command's wasip1 port declares its table so):
// table.grow by 2^25 elements makes wazero allocate 256 MiB, for a module
// of a hundred bytes. The control compiles the same module straight
// through wazero, without the reader, and the table grows. With the
// reader the module compiles, its table has a maximum within
// Limits.TableElements, and the grow fails (returns -1) without
// allocating; a grow within the limit still succeeds.
func TestTableWithoutMaximum(t *testing.T) {
	const n = 1 << 25
	ctx := context.Background()
	r := newRuntime(t, Options{})

	control := hostAlloc(func() {
		cm, err := r.rt.CompileModule(ctx, growTable(n, 10))
		if err != nil {
			t.Fatalf("control: %v", err)
		}
		defer cm.Close(ctx)
		m := &Module{r: r, cm: cm}
		if res, err := m.Run(ctx, Config{}); err != nil || !res.OK() {
			t.Fatalf("control: the grow did not succeed without the reader: %v, %+v", err, res)
		}
	})
	if control < n*8 {
		t.Fatalf("control: the host allocated %d MiB growing the table, want at least %d", control>>20, n*8>>20)
	}

	var res *sandbox.Result
	attack := hostAlloc(func() {
		m, err := r.Compile(ctx, growTable(n, -1))
		if err != nil {
			t.Fatalf("Compile: %v", err)
		}
		if res, err = m.Run(ctx, Config{}); err != nil {
			t.Fatal(err)
		}
	})
	if !res.OK() {
		t.Errorf("table.grow by %d did not return -1: %+v", n, res)
	}
	if attack > 16<<20 {
		t.Errorf("the host allocated %d MiB running the attack", attack>>20)
	}

	m, err := r.Compile(ctx, growTable(1000, 10))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.Run(ctx, Config{}); err != nil || !res.OK() {
		t.Errorf("a grow within the limit: %v, %+v", err, res)
	}
}

// TestModuleSizeLimits: the size limits, and that each is the runtime's
// own (Options.Limits).
func TestModuleSizeLimits(t *testing.T) {
	ctx := context.Background()
	body := cat(i32(1), drop)
	big := cat(body, body, body, body) // 16 bytes of instructions
	r := newRuntime(t, Options{Limits: Limits{ModuleBytes: 200, FunctionBytes: 12, TableElements: 10, Definitions: 4, Locals: 10}})
	for _, tt := range []struct {
		name string
		bin  []byte
		want string // "" compiles
	}{
		{"under every limit", tiny(body, map[byte][]byte{4: tables(1, 10, false), 10: localsCode(10)}), ""},
		{"module bytes", cat(tiny(nil, nil), section(0, cat(name("pad"), make([]byte, 200)))), "(Limits.ModuleBytes)"},
		{"function bytes", tiny(big, nil), "(Limits.FunctionBytes)"},
		{"table elements", tiny(nil, map[byte][]byte{4: tables(1, 11, false)}), "(Limits.TableElements)"},
		{"definitions", tiny(nil, map[byte][]byte{6: vec(cat([]byte{0x7f, 0x00}, i32(1), end), cat([]byte{0x7f, 0x00}, i32(1), end), cat([]byte{0x7f, 0x00}, i32(1), end), cat([]byte{0x7f, 0x00}, i32(1), end), cat([]byte{0x7f, 0x00}, i32(1), end))}), "(Limits.Definitions)"},
		{"locals", tiny(nil, map[byte][]byte{10: localsCode(11)}), "(Limits.Locals)"},
	} {
		_, err := r.Compile(ctx, tt.bin)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrModuleLimit) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want a refusal naming %s", tt.name, err, tt.want)
		}
	}
}

// FuzzCheckModule: the section reader never panics or reads past the
// binary, whatever the bytes; and a module it accepts, the runtime
// compiles and instantiates without allocating more than a bounded
// multiple of the module's size (or refuses it), which is what the
// reader is for.
func FuzzCheckModule(f *testing.F) {
	for _, b := range [][]byte{
		helloModule(), exitModule(3), growModule(2), readModule("x"),
		tiny(nil, map[byte][]byte{4: tables(2, 100, false)}),
		tiny(nil, map[byte][]byte{9: vec(cat([]byte{0x01, 0x00}, vec(uleb(0))))}),
		tiny(nil, map[byte][]byte{9: vec(cat([]byte{0x05, 0x70}, vec(cat([]byte{0xd2}, uleb(0), end))))}),
		tiny(nil, map[byte][]byte{11: vec(cat([]byte{0x01}, uleb(4), []byte("data")))}),
		tiny(nil, map[byte][]byte{10: localsCode(100)}),
		cat(tiny(nil, nil), section(0, cat(name("name"), []byte{0x01}, uleb(8), vec(cat(uleb(0), name("start")))))),
		{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		f.Add(b)
	}
	ctx := context.Background()
	r, err := NewRuntime(ctx, Options{MemoryPages: 16})
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, bin []byte) {
		if _, err := checkModule(bin, r.limits, r.pages); err != nil {
			return
		}
		n := hostAlloc(func() {
			if m, err := r.Compile(ctx, bin); err == nil {
				// A module that spins is stopped: the bound is on memory.
				rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				m.Run(rctx, Config{})
				cancel()
				m.cm.Close(ctx)
			}
		})
		// Tables at their limit are 8 MiB; everything else grows with
		// the module's bytes.
		if bound := uint64(64<<20 + 256*len(bin)); n > bound {
			t.Fatalf("%x: accepted, and the host allocated %d MiB compiling and running it", bin, n>>20)
		}
	})
}
