package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits bound what a module can make the host allocate besides its
// linear memory (which [Options.MemoryPages] bounds): the runtime's
// tables, the structures it decodes a module into, and the code it
// compiles. [Runtime.Compile] checks a module against them, reading its
// sections with a bounded reader, before the runtime sees a byte of it,
// and refuses one over a limit with an error that wraps [ErrModuleLimit]
// and names the limit. A zero field means its default.
//
// The reader also refuses a module whose declared counts and sizes do
// not fit the bytes that follow them (a vector of a billion entries in a
// ten-byte section), which the runtime would allocate for before it
// noticed.
type Limits struct {
	// ModuleBytes bounds the module's binary, which bounds what is
	// compiled from it. Default DefaultModuleBytes.
	ModuleBytes int
	// FunctionBytes bounds the body of one function. Default
	// DefaultFunctionBytes.
	FunctionBytes int
	// TableElements bounds the elements of all the module's tables
	// together, imported ones included, each counted at its declared
	// maximum (a table may grow to it while the module runs), and the
	// elements of all its element segments together. A table the module
	// defines without a maximum (as the go command's wasip1 port does) is
	// given one before the module is compiled: its minimum plus an equal
	// share of what the limit leaves, so that table.grow past it fails
	// (returns -1, as the specification allows) instead of allocating; an
	// imported table without a maximum is refused. Default
	// DefaultTableElements.
	TableElements uint32
	// Definitions bounds the number of each kind of definition: types,
	// imports, functions, globals, exports, element and data segments,
	// and entries of the name section. Default DefaultDefinitions.
	Definitions uint32
	// Locals bounds the locals one function declares; all functions
	// together may declare 64 times as many. Default DefaultLocals.
	Locals uint32
}

// Defaults of [Limits].
const (
	DefaultModuleBytes   = 32 << 20
	DefaultFunctionBytes = 2 << 20
	DefaultTableElements = 1 << 20
	DefaultDefinitions   = 1 << 17
	DefaultLocals        = 1 << 16
)

// ErrModuleLimit is wrapped by the error of a module that goes over one
// of its [Limits] or of the memory limit.
var ErrModuleLimit = errors.New("over a limit")

func (l Limits) withDefaults() Limits {
	if l.ModuleBytes <= 0 {
		l.ModuleBytes = DefaultModuleBytes
	}
	if l.FunctionBytes <= 0 {
		l.FunctionBytes = DefaultFunctionBytes
	}
	if l.TableElements == 0 {
		l.TableElements = DefaultTableElements
	}
	if l.Definitions == 0 {
		l.Definitions = DefaultDefinitions
	}
	if l.Locals == 0 {
		l.Locals = DefaultLocals
	}
	return l
}

// Section ids of the binary format.
const (
	secCustom = iota
	secType
	secImport
	secFunction
	secTable
	secMemory
	secGlobal
	secExport
	secStart
	secElement
	secCode
	secData
	secDataCount
	secTag
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global", "export", "start", "element", "code", "data", "data count", "tag"}

// checkModule reads bin as the sections of a WebAssembly binary and
// checks it against l and the memory limit pages. It looks at every
// count and size the runtime would allocate for, and at nothing else: the
// runtime still validates the module. It returns the binary to compile:
// bin itself, or a copy whose table section gives a maximum to each
// table that had none (see [Limits.TableElements]).
func checkModule(bin []byte, l Limits, pages uint32) ([]byte, error) {
	if len(bin) > l.ModuleBytes {
		return nil, overLimit("the module is %d bytes; the limit is %d (Limits.ModuleBytes)", len(bin), l.ModuleBytes)
	}
	r := &reader{b: bin}
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly binary (no \\0asm header)")
	}
	r.i = 8
	c := &counter{l: l, pages: pages}
	for r.more() {
		start := r.i
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section %d: size: %w", id, err)
		}
		body, err := r.bytes(size)
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		if id == secTable {
			c.tableSection = [2]int{start, r.i}
		}
		sr := &reader{b: body}
		if err := c.section(id, sr); err != nil {
			if int(id) < len(sectionNames) {
				return nil, fmt.Errorf("%s section: %w", sectionNames[id], err)
			}
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
	}
	return c.boundTables(bin)
}

// boundTables returns bin with a maximum declared for each table the
// module defines without one: its minimum and an equal share of the
// elements the other tables and segments leave under the limit. When
// every table has a maximum it returns bin itself.
func (c *counter) boundTables(bin []byte) ([]byte, error) {
	var unbounded uint64
	for _, t := range c.defined {
		if t.max < 0 {
			unbounded++
		}
	}
	if unbounded == 0 {
		return bin, nil
	}
	share := (uint64(c.l.TableElements) - c.tableElements) / unbounded
	body := binary.AppendUvarint(nil, uint64(len(c.defined)))
	for _, t := range c.defined {
		max := t.max
		if max < 0 {
			max = int64(t.min) + int64(share)
		}
		body = append(body, t.ref, t.flag|0x01)
		body = binary.AppendUvarint(body, uint64(t.min))
		body = binary.AppendUvarint(body, uint64(max))
	}
	out := make([]byte, 0, len(bin)+len(body)+5)
	out = append(out, bin[:c.tableSection[0]]...)
	out = append(out, secTable)
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	out = append(out, bin[c.tableSection[1]:]...)
	if len(out) > c.l.ModuleBytes {
		return nil, overLimit("the module is %d bytes once its tables are bounded; the limit is %d (Limits.ModuleBytes)", len(out), c.l.ModuleBytes)
	}
	return out, nil
}

func overLimit(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrModuleLimit)
}

// A reader reads the binary format from b, never past its end.
type reader struct {
	b []byte
	i int
}

var errTruncated = errors.New("unexpected end")

func (r *reader) more() bool { return r.i < len(r.b) }
func (r *reader) left() int  { return len(r.b) - r.i }

func (r *reader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(r.left()) {
		return nil, fmt.Errorf("%d bytes declared, %d remain", n, r.left())
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, nil
}

// leb reads an LEB128 number of at most bits bits, signed or not, and
// returns its low 64 bits.
func (r *reader) leb(bits uint, signed bool) (uint64, error) {
	var v uint64
	var shift uint
	for n := uint(0); ; n++ {
		if n*7 >= bits {
			return 0, errors.New("integer too long")
		}
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if !signed && bits < 64 && shift > bits && c>>(bits-(shift-7)) != 0 {
				return 0, errors.New("integer too large")
			}
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.leb(32, false)
	return uint32(v), err
}

// count reads the length of a vector whose entries take at least min
// bytes each, and refuses one the rest of the section cannot hold.
func (r *reader) count(min int) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(min) > uint64(r.left()) {
		return 0, fmt.Errorf("a vector of %d entries declared, %d bytes remain", n, r.left())
	}
	return n, nil
}

func (r *reader) name() error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	b, err := r.bytes(n)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return errors.New("a name is not valid UTF-8")
	}
	return nil
}

// A counter adds up what a module's sections declare.
type counter struct {
	l                                    Limits
	pages                                uint32
	funcs, globals, tables, memories     uint32
	tableElements, segmentElements       uint64
	locals, names, segments, codeEntries uint64

	// defined are the tables of the table section, and tableSection
	// where that section starts and ends in the binary, so that
	// boundTables can write it again.
	defined      []tableType
	tableSection [2]int
}

// A tableType is one entry of the table section.
type tableType struct {
	ref  byte
	flag byte // of its limits; boundTables sets the maximum's bit
	min  uint32
	max  int64 // -1: none declared
}

func (c *counter) add(n *uint32, more uint32, what string) error {
	if uint64(*n)+uint64(more) > uint64(c.l.Definitions) {
		return overLimit("more than %d %s (Limits.Definitions)", c.l.Definitions, what)
	}
	*n += more
	return nil
}

func (c *counter) definitions(n uint32, what string) error {
	if n > c.l.Definitions {
		return overLimit("%d %s; the limit is %d (Limits.Definitions)", n, what, c.l.Definitions)
	}
	return nil
}

func (c *counter) section(id byte, r *reader) error {
	switch id {
	case secCustom:
		return c.custom(r)
	case secType:
		return c.types(r)
	case secImport:
		return c.imports(r)
	case secFunction:
		n, err := r.count(1)
		if err != nil {
			return err
		}
		return c.add(&c.funcs, n, "functions")
	case secTable:
		n, err := r.count(3)
		if err != nil {
			return err
		}
		for range n {
			if err := c.table(r, true); err != nil {
				return err
			}
		}
	case secMemory:
		n, err := r.count(2)
		if err != nil {
			return err
		}
		for range n {
			if err := c.memory(r); err != nil {
				return err
			}
		}
	case secGlobal:
		n, err := r.count(3)
		if err != nil {
			return err
		}
		if err := c.add(&c.globals, n, "globals"); err != nil {
			return err
		}
		for range n {
			if _, err := r.bytes(2); err != nil { // type, mutability
				return err
			}
			if err := constExpr(r); err != nil {
				return err
			}
		}
	case secExport:
		n, err := r.count(3)
		if err != nil {
			return err
		}
		if err := c.definitions(n, "exports"); err != nil {
			return err
		}
		for range n {
			if err := r.name(); err != nil {
				return err
			}
			if _, err := r.byte(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		}
	case secStart, secDataCount:
		if _, err := r.u32(); err != nil {
			return err
		}
	case secElement:
		return c.elements(r)
	case secCode:
		return c.code(r)
	case secData:
		return c.data(r)
	default:
		// Tags and unknown sections: the runtime refuses what it does
		// not support; nothing here is allocated per declared count.
		return nil
	}
	if r.more() {
		return fmt.Errorf("%d bytes after the last entry", r.left())
	}
	return nil
}

func (c *counter) types(r *reader) error {
	n, err := r.count(3)
	if err != nil {
		return err
	}
	if err := c.definitions(n, "types"); err != nil {
		return err
	}
	for range n {
		if _, err := r.byte(); err != nil { // 0x60
			return err
		}
		for range 2 { // parameters, results
			k, err := r.count(1)
			if err != nil {
				return err
			}
			if _, err := r.bytes(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *counter) imports(r *reader) error {
	n, err := r.count(4)
	if err != nil {
		return err
	}
	if err := c.definitions(n, "imports"); err != nil {
		return err
	}
	for range n {
		if err := r.name(); err != nil {
			return err
		}
		if err := r.name(); err != nil {
			return err
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // function
			if _, err := r.u32(); err != nil {
				return err
			}
			if err := c.add(&c.funcs, 1, "functions"); err != nil {
				return err
			}
		case 0x01:
			if err := c.table(r, false); err != nil {
				return err
			}
		case 0x02:
			if err := c.memory(r); err != nil {
				return err
			}
		case 0x03:
			if _, err := r.bytes(2); err != nil {
				return err
			}
			if err := c.add(&c.globals, 1, "globals"); err != nil {
				return err
			}
		case 0x04: // tag: attribute, type index
			if _, err := r.byte(); err != nil {
				return err
			}
			if _, err := r.u32(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("import kind %#x", kind)
		}
	}
	return nil
}

// limits reads a limits pair; max is -1 when absent.
func (r *reader) limits() (min uint32, max int64, err error) {
	flag, err := r.byte()
	if err != nil {
		return 0, 0, err
	}
	if flag > 3 {
		return 0, 0, fmt.Errorf("limits flag %#x", flag)
	}
	if min, err = r.u32(); err != nil {
		return 0, 0, err
	}
	max = -1
	if flag&1 != 0 {
		m, err := r.u32()
		if err != nil {
			return 0, 0, err
		}
		max = int64(m)
	}
	return min, max, nil
}

// table reads one table type, of a table the module defines (in its
// table section) or imports. A defined table without a maximum counts
// at its minimum here; boundTables gives it a maximum within the limit.
func (c *counter) table(r *reader, defined bool) error {
	ref, err := r.byte() // reference type
	if err != nil {
		return err
	}
	var flag byte
	if r.more() {
		flag = r.b[r.i]
	}
	min, max, err := r.limits()
	if err != nil {
		return err
	}
	i := c.tables
	c.tables++
	if defined {
		c.defined = append(c.defined, tableType{ref: ref, flag: flag, min: min, max: max})
		if max < 0 {
			max = int64(min)
		}
	}
	if max < 0 {
		return overLimit("imported table %d has no maximum, so the module could grow it to 2^32 elements; import one of at most %d (Limits.TableElements)", i, c.l.TableElements)
	}
	if max < int64(min) {
		max = int64(min) // the runtime refuses it; count what it would allocate
	}
	c.tableElements += uint64(max)
	if c.tableElements > uint64(c.l.TableElements) {
		return overLimit("table %d may hold %d elements, the tables together %d; the limit is %d (Limits.TableElements)", i, max, c.tableElements, c.l.TableElements)
	}
	return nil
}

func (c *counter) memory(r *reader) error {
	min, _, err := r.limits()
	if err != nil {
		return err
	}
	i := c.memories
	c.memories++
	if min > c.pages {
		return overLimit("memory %d starts at %d pages; the limit is %d (Options.MemoryPages)", i, min, c.pages)
	}
	if c.memories > 1 {
		return errors.New("more than one memory")
	}
	return nil
}

// constExpr skips a constant expression, up to its end.
func constExpr(r *reader) error {
	for steps := 0; ; steps++ {
		op, err := r.byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			_, err = r.leb(32, true)
		case 0x42: // i64.const
			_, err = r.leb(64, true)
		case 0x43:
			_, err = r.bytes(4)
		case 0x44:
			_, err = r.bytes(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, err = r.u32()
		case 0xd0: // ref.null
			_, err = r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			var sub uint32
			if sub, err = r.u32(); err == nil {
				if sub != 12 {
					return fmt.Errorf("instruction 0xfd %d in a constant expression", sub)
				}
				_, err = r.bytes(16)
			}
		default:
			return fmt.Errorf("instruction %#x in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

func (c *counter) elements(r *reader) error {
	n, err := r.count(3)
	if err != nil {
		return err
	}
	if err := c.addSegments(n); err != nil {
		return err
	}
	for range n {
		flag, err := r.u32()
		if err != nil {
			return err
		}
		if flag > 7 {
			return fmt.Errorf("element segment flag %d", flag)
		}
		if flag&3 == 2 { // explicit table index
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		if flag&1 == 0 { // active: offset
			if err := constExpr(r); err != nil {
				return err
			}
		}
		if flag&3 != 0 { // element kind or reference type
			if _, err := r.byte(); err != nil {
				return err
			}
		}
		k, err := r.count(1)
		if err != nil {
			return err
		}
		if c.segmentElements += uint64(k); c.segmentElements > uint64(c.l.TableElements) {
			return overLimit("the element segments hold more than %d elements (Limits.TableElements)", c.l.TableElements)
		}
		for range k {
			if flag&4 == 0 {
				_, err = r.u32()
			} else {
				err = constExpr(r)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *counter) code(r *reader) error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	if err := c.definitions(n, "function bodies"); err != nil {
		return err
	}
	for i := range n {
		size, err := r.u32()
		if err != nil {
			return err
		}
		if int64(size) > int64(c.l.FunctionBytes) {
			return overLimit("function body %d is %d bytes; the limit is %d (Limits.FunctionBytes)", i, size, c.l.FunctionBytes)
		}
		body, err := r.bytes(size)
		if err != nil {
			return err
		}
		br := &reader{b: body}
		decls, err := br.count(2)
		if err != nil {
			return fmt.Errorf("function body %d: %w", i, err)
		}
		var locals uint64
		for range decls {
			k, err := br.u32()
			if err != nil {
				return err
			}
			if _, err := br.byte(); err != nil {
				return err
			}
			locals += uint64(k)
			if locals > uint64(c.l.Locals) {
				return overLimit("function body %d declares more than %d locals (Limits.Locals)", i, c.l.Locals)
			}
		}
		if c.locals += locals; c.locals > 64*uint64(c.l.Locals) {
			return overLimit("the functions declare more than %d locals together (64 × Limits.Locals)", 64*uint64(c.l.Locals))
		}
	}
	return nil
}

func (c *counter) data(r *reader) error {
	n, err := r.count(2)
	if err != nil {
		return err
	}
	if err := c.addSegments(n); err != nil {
		return err
	}
	for range n {
		flag, err := r.u32()
		if err != nil {
			return err
		}
		switch flag {
		case 0:
			err = constExpr(r)
		case 1:
		case 2:
			if _, err = r.u32(); err == nil {
				err = constExpr(r)
			}
		default:
			return fmt.Errorf("data segment flag %d", flag)
		}
		if err != nil {
			return err
		}
		k, err := r.u32()
		if err != nil {
			return err
		}
		if _, err := r.bytes(k); err != nil {
			return err
		}
	}
	return nil
}

// custom reads a custom section's name, and the name section's maps,
// whose counts the runtime allocates for.
func (c *counter) custom(r *reader) error {
	start := r.i
	if err := r.name(); err != nil {
		return err
	}
	if string(r.b[start:r.i]) != "\x04name" {
		return nil
	}
	for r.more() {
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		body, err := r.bytes(size)
		if err != nil {
			return err
		}
		if id != 1 && id != 2 {
			continue
		}
		sr := &reader{b: body}
		n, err := sr.count(2)
		if err != nil {
			return fmt.Errorf("name subsection %d: %w", id, err)
		}
		if err := c.namesAdd(n); err != nil {
			return err
		}
		for range n {
			if _, err := sr.u32(); err != nil {
				return err
			}
			if id == 1 {
				if err := sr.name(); err != nil {
					return err
				}
				continue
			}
			k, err := sr.count(2)
			if err != nil {
				return err
			}
			if err := c.namesAdd(k); err != nil {
				return err
			}
			for range k {
				if _, err := sr.u32(); err != nil {
					return err
				}
				if err := sr.name(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *counter) addSegments(n uint32) error {
	if c.segments += uint64(n); c.segments > uint64(c.l.Definitions) {
		return overLimit("more than %d element and data segments (Limits.Definitions)", c.l.Definitions)
	}
	return nil
}

func (c *counter) namesAdd(n uint32) error {
	if c.names += uint64(n); c.names > uint64(c.l.Definitions) {
		return overLimit("the name section names more than %d things (Limits.Definitions)", c.l.Definitions)
	}
	return nil
}
