// Command toolmod is a WebAssembly tool module for the plugins tests and
// the example of the module ABI: it is run as "toolmod TOOL", reads the
// call's arguments as JSON on standard input and writes its result to
// standard output. It serves four tools:
//
//   - upper {"text": string}: the text in upper case;
//   - spin {}: never returns, to be stopped at the deadline;
//   - read {"path": string}: the contents of a file, which the sandbox
//     denies unless the configuration grants a workspace;
//   - getenv {"name": string}: "=" and the value of the module's
//     environment variable name.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -o toolmod.wasm .
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fail("no tool named: the host runs the module as MODULE TOOL")
	}
	var args struct {
		Text string `json:"text"`
		Path string `json:"path"`
		Name string `json:"name"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
		fail("arguments: " + err.Error())
	}
	switch os.Args[1] {
	case "upper":
		fmt.Print(strings.ToUpper(args.Text))
	case "spin":
		for n := 0; ; n++ {
			_ = n
		}
	case "read":
		b, err := os.ReadFile(args.Path)
		if err != nil {
			fail(err.Error())
		}
		os.Stdout.Write(b)
	case "getenv":
		fmt.Print("=" + os.Getenv(args.Name))
	default:
		fail("unknown tool " + os.Args[1])
	}
}

// fail reports a tool error: a message on standard error and exit status 1.
func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}
