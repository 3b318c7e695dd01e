package tool

import (
	"context"
	"encoding/json"
	"errors"
)

// New returns a Tool that calls fn, the way http.HandlerFunc adapts a
// function to http.Handler. It is the Go form of the seed design's @tool
// decorator.
//
// The parameters schema is derived from In once, here (see the package
// documentation for the rules and the struct-tag grammar); In must be a
// struct type, or a pointer to one. Every call is parsed strictly,
// validated and bound into In in a single pass compiled from the type, with
// defaults applied, before fn runs; fn never sees arguments that do not
// match the schema. New returns an error naming the field path when In or
// Out contains something JSON cannot express (a channel, a function, a
// complex number, a map whose keys are not strings, an interface with
// methods) or a tag it cannot parse.
//
// Out becomes the Result: a string is the Output as it is; any other type is
// marshalled to JSON and becomes both the Output and Result.Structured, and
// its schema becomes Options.OutputSchema. An error from fn becomes an
// error Result carrying the error's message.
func New[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) (Tool, error) {
	return nil, errors.New("not implemented yet")
}

// Must returns t, or panics if err is not nil. It is for tools built at
// program start, as in
//
//	var search = tool.Must(tool.New("search", "Searches the web.", searchFn))
func Must(t Tool, err error) Tool {
	if err != nil {
		panic(err)
	}
	return t
}

var _ = json.RawMessage(nil)
