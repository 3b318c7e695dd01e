package wasm

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
)

// This file assembles the small WebAssembly modules the tests run, so that
// no compiler for WebAssembly is needed.

func uleb(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func vec(items ...[]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func name(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Instructions.
func i32(v int64) []byte    { return append([]byte{0x41}, sleb(v)...) }
func i64(v int64) []byte    { return append([]byte{0x42}, sleb(v)...) }
func call(f int) []byte     { return append([]byte{0x10}, uleb(uint64(f))...) }
func localSet(l int) []byte { return []byte{0x21, byte(l)} }
func localGet(l int) []byte { return []byte{0x20, byte(l)} }

var (
	drop     = []byte{0x1a}
	end      = []byte{0x0b}
	loop     = []byte{0x03, 0x40}
	ifVoid   = []byte{0x04, 0x40}
	br0      = []byte{0x0c, 0x00}
	i32Add   = []byte{0x6a}
	i32Eq    = []byte{0x46}
	i32Load  = []byte{0x28, 0x02, 0x00}
	i32Store = []byte{0x36, 0x02, 0x00}
	memGrow  = []byte{0x40, 0x00}
)

// Imported functions, by index.
const (
	fdWrite = iota
	procExit
	fdRead
	pathOpen
)

// module assembles a module whose _start runs body (with one i32 local) and
// whose memory holds data at the given offsets.
func module(body []byte, data map[int][]byte) []byte {
	i32t, i64t := byte(0x7f), byte(0x7e)
	fn := func(params []byte, results []byte) []byte {
		return cat([]byte{0x60}, uleb(uint64(len(params))), params, uleb(uint64(len(results))), results)
	}
	types := vec(
		fn([]byte{i32t, i32t, i32t, i32t}, []byte{i32t}), // 0: fd_write, fd_read
		fn([]byte{i32t}, nil),                            // 1: proc_exit
		fn(nil, nil),                                     // 2: _start
		fn([]byte{i32t, i32t, i32t, i32t, i32t, i64t, i64t, i32t, i32t}, []byte{i32t}), // 3: path_open
	)
	imp := func(field string, typ int) []byte {
		return cat(name("wasi_snapshot_preview1"), name(field), []byte{0x00}, uleb(uint64(typ)))
	}
	imports := vec(imp("fd_write", 0), imp("proc_exit", 1), imp("fd_read", 0), imp("path_open", 3))
	funcs := vec(uleb(2))
	memory := vec([]byte{0x00, 0x01})
	exports := vec(cat(name("memory"), []byte{0x02, 0x00}), cat(name("_start"), []byte{0x00, 0x04}))
	code := cat(vec([]byte{0x01, 0x7f}), body, end) // one i32 local
	codes := vec(cat(uleb(uint64(len(code))), code))
	// Segments in offset order: the same module must have the same bytes
	// (the compilation cache is keyed by them).
	var segs [][]byte
	for _, off := range slices.Sorted(maps.Keys(data)) {
		b := data[off]
		segs = append(segs, cat([]byte{0x00}, i32(int64(off)), end, uleb(uint64(len(b))), b))
	}
	return cat([]byte("\x00asm\x01\x00\x00\x00"),
		section(1, types), section(2, imports), section(3, funcs), section(5, memory),
		section(7, exports), section(10, codes), section(11, vec(segs...)))
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// write writes the iovec at 0 to stdout.
var write = cat(i32(1), i32(0), i32(1), i32(8), call(fdWrite), drop)

func helloModule() []byte {
	return module(write, map[int][]byte{0: le32(16, 6), 16: []byte("hello\n")})
}

func exitModule(code int) []byte { return module(cat(i32(int64(code)), call(procExit)), nil) }

func spinModule() []byte { return module(cat(loop, br0, end), nil) }

func floodModule() []byte {
	return module(cat(loop, write, br0, end), map[int][]byte{0: le32(16, 6), 16: []byte("flood\n")})
}

// growModule grows memory by pages and exits 9 when that fails, 0 when not.
func growModule(pages int) []byte {
	return module(cat(i32(int64(pages)), memGrow, i32(-1), i32Eq, ifVoid, i32(9), call(procExit), end, i32(0), call(procExit)), nil)
}

// readModule opens path under the preopened directory (fd 3), following
// links, and copies up to 1 KiB of it to stdout. A failed open exits with
// 100 + the WASI errno.
func readModule(path string) []byte {
	body := cat(
		i32(3), i32(1), i32(100), i32(int64(len(path))), i32(0), i64(-1), i64(-1), i32(0), i32(12), call(pathOpen), localSet(0),
		localGet(0), ifVoid, localGet(0), i32(100), i32Add, call(procExit), end,
		i32(12), i32Load, i32(0), i32(1), i32(8), call(fdRead), drop,
		i32(4), i32(8), i32Load, i32Store,
		write,
		i32(0), call(procExit),
	)
	return module(body, map[int][]byte{0: le32(200, 1024), 100: []byte(path)})
}
