package toolbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/toolbox"
)

func ExampleRegister() {
	r := tool.NewRegistry()
	if err := toolbox.Register(r); err != nil {
		log.Fatal(err)
	}
	for _, t := range r.List() {
		a := tool.OptionsOf(t).Annotations
		fmt.Printf("%-13s %-15s read-only=%t\n", t.Name(), a.Title, a.ReadOnly)
	}
	// Output:
	// calc          Calculator      read-only=true
	// convert_units Unit converter  read-only=true
	// current_time  Current time    read-only=true
	// kv            Key-value store read-only=false
	// wait          Wait            read-only=true
}

func ExampleCalc() {
	r := tool.NewRegistry()
	if err := r.Register(toolbox.Calc()); err != nil {
		log.Fatal(err)
	}
	for _, expr := range []string{"2 * (3 + 4)", "sqrt(2) ^ 2", "-2^2", "round(100 / 7, 2)", "1 / (2 - 2)"} {
		args, _ := json.Marshal(map[string]string{"expression": expr})
		res := r.Execute(context.Background(), "calc", args)
		if res.IsError {
			fmt.Printf("%s: error: %s\n", expr, res.Error)
			continue
		}
		fmt.Printf("%s = %s\n", expr, res.Output)
	}
	// Output:
	// 2 * (3 + 4) = 14
	// sqrt(2) ^ 2 = 2
	// -2^2 = -4
	// round(100 / 7, 2) = 14.29
	// 1 / (2 - 2): error: at column 3: division by zero
}

func ExampleConvertUnits() {
	r := tool.NewRegistry()
	if err := r.Register(toolbox.ConvertUnits()); err != nil {
		log.Fatal(err)
	}
	res := r.Execute(context.Background(), "convert_units", json.RawMessage(`{"value":5,"from":"km","to":"mi"}`))
	fmt.Println(res.Output)
	res = r.Execute(context.Background(), "convert_units", json.RawMessage(`{"value":98.6,"from":"F","to":"C"}`))
	fmt.Println(res.Output)
	// Output:
	// {"value":3.10685596119,"unit":"mi","text":"5 km = 3.10685596119 mi"}
	// {"value":37,"unit":"C","text":"98.6 F = 37 C"}
}

func ExampleCurrentTime() {
	r := tool.NewRegistry()
	if err := r.Register(toolbox.CurrentTime()); err != nil {
		log.Fatal(err)
	}
	// With "at", the tool converts a given time instead of reading the clock.
	res := r.Execute(context.Background(), "current_time",
		json.RawMessage(`{"zone":"Europe/Paris","at":"2026-07-14T08:00:00Z","format":"rfc1123"}`))
	fmt.Println(res.Output)
	// Output:
	// {"time":"Tue, 14 Jul 2026 10:00:00 CEST","zone":"Europe/Paris","abbreviation":"CEST","utc_offset":"+02:00","dst":true,"weekday":"Tuesday","unix":1784016000}
}

func ExampleKV() {
	r := tool.NewRegistry()
	if err := r.Register(toolbox.NewKV()); err != nil {
		log.Fatal(err)
	}
	for _, args := range []string{
		`{"op":"set","key":"todo/1","value":"book the flight"}`,
		`{"op":"set","key":"todo/2","value":"pack"}`,
		`{"op":"get","key":"todo/1"}`,
		`{"op":"list","prefix":"todo/"}`,
		`{"op":"delete","key":"todo/1"}`,
		`{"op":"get","key":"todo/1"}`,
	} {
		res := r.Execute(context.Background(), "kv", json.RawMessage(args))
		if res.IsError {
			fmt.Println("error:", res.Error)
			continue
		}
		fmt.Println(res.Output)
	}
	// Output:
	// stored "todo/1" (15 characters)
	// stored "todo/2" (4 characters)
	// book the flight
	// todo/1
	// todo/2
	// deleted "todo/1"
	// error: no key "todo/1"; the store has 1 key (see them with {"op":"list"})
}
