// Command reactormod is a WebAssembly tool module for the plugins tests
// and the example of the reactor ABI: built as a WASI reactor, it is
// instantiated once and kept warm, and each call goes through two
// exported functions instead of a process start:
//
//   - clawtool_alloc(size uint32) uint32 returns the address of a buffer
//     of size bytes that the host fills: the tool's name, then the call's
//     arguments as JSON;
//   - clawtool_call(ptr, nameLen, argsLen uint32) uint64 runs the tool
//     and returns the address of its result in the high 32 bits and its
//     length in the low 32: a JSON object {"output": TEXT} or
//     {"error": MESSAGE}. The result stays valid until the next call.
//
// It serves the tools of testdata/toolmod (upper, spin, read) and three
// more for the tests: count (how many calls this instance has served,
// showing that state persists), big (a result of {"n": bytes}), garbage
// (a result that is not JSON) and hold (keeps {"n": bytes} more memory,
// for good).
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o reactormod.wasm .
package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

// main is not run: a reactor's runtime starts in _initialize.
func main() {}

var (
	in     []byte   // the buffer of the call being made
	out    []byte   // the result of the last call
	served int      // calls this instance served
	held   [][]byte // what hold keeps
)

//go:wasmexport clawtool_alloc
func alloc(size uint32) uint32 {
	in = make([]byte, size)
	return addr(in)
}

//go:wasmexport clawtool_call
func call(ptr, nameLen, argsLen uint32) uint64 {
	if ptr != addr(in) || uint64(nameLen)+uint64(argsLen) > uint64(len(in)) {
		return reply(map[string]string{"error": "the call's buffer is not the one clawtool_alloc returned"})
	}
	served++
	name, args := string(in[:nameLen]), in[nameLen:nameLen+argsLen]
	var a struct {
		Text string `json:"text"`
		Path string `json:"path"`
		N    int    `json:"n"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return reply(map[string]string{"error": "arguments: " + err.Error()})
	}
	switch name {
	case "upper":
		return reply(map[string]string{"output": strings.ToUpper(a.Text)})
	case "count":
		return reply(map[string]string{"output": strconv.Itoa(served)})
	case "spin":
		for n := 0; ; n++ {
			_ = n
		}
	case "read":
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return reply(map[string]string{"error": err.Error()})
		}
		return reply(map[string]string{"output": string(b)})
	case "big":
		return reply(map[string]string{"output": strings.Repeat("x", a.N)})
	case "hold":
		b := make([]byte, a.N)
		for i := range b {
			b[i] = byte(i)
		}
		held = append(held, b)
		return reply(map[string]string{"output": strconv.Itoa(len(held))})
	case "garbage":
		out = []byte("this is not JSON")
		return uint64(addr(out))<<32 | uint64(len(out))
	}
	return reply(map[string]string{"error": "unknown tool " + name})
}

// reply keeps v, encoded, as the result of the call and returns where it is.
func reply(v map[string]string) uint64 {
	out, _ = json.Marshal(v)
	return uint64(addr(out))<<32 | uint64(len(out))
}

// addr is the address of b's first byte in linear memory.
func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}
