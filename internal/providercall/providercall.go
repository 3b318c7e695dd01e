// Package providercall holds what the provider adapters (openaitool,
// anthropictool, geminitool) do alike when they read the tool calls of a
// model's response and answer them: ids for calls that came without one,
// ids unique within a batch, the arguments of a call, the message of a
// failure that carries none, and short excerpts of an error response.
//
// What differs between providers (where the calls are in a response, how
// arguments are encoded, how a result goes back) stays in each adapter.
package providercall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/miniopenclaw/tool"
)

// StableID returns the id given to a call that came without one: prefix
// and 16 hex digits of an FNV-1a hash of the call's position in the
// response, its name and its arguments, so that parsing the same response
// twice gives the same ids.
func StableID(prefix string, index int, name string, args []byte) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s\x00", index, name)
	h.Write(args)
	return fmt.Sprintf("%s%016x", prefix, h.Sum64())
}

// AssignIDs gives each call without an id StableID(prefix, …) of its
// index, name and arguments, and makes repeated ids unique by adding "_2",
// "_3", … (the first number that makes an id not seen before in calls),
// so that every call of the batch has an id of its own. It changes calls
// in place and returns it.
func AssignIDs(calls []tool.Call, prefix string) []tool.Call {
	assignIDs(calls, prefix, nil)
	return calls
}

// assignIDs is AssignIDs, counting in *probes (when not nil) the ids it
// tried, so that a test can hold its work to the size of the batch.
func assignIDs(calls []tool.Call, prefix string, probes *int) {
	seen := make(map[string]bool, len(calls))
	// next[base] is the first suffix not yet tried for base: every
	// smaller one was seen, and seen only grows, so starting there gives
	// the same id as starting from 2, and a response that repeats one id
	// n times costs n tries, not n²/2.
	var next map[string]int
	for i := range calls {
		c := &calls[i]
		if c.ID == "" {
			c.ID = StableID(prefix, i, c.Name, c.Args)
		}
		if seen[c.ID] {
			if next == nil {
				next = make(map[string]int)
			}
			base := c.ID
			n := max(next[base], 2)
			for ; seen[c.ID]; n++ {
				if probes != nil {
					*probes++
				}
				c.ID = base + "_" + strconv.Itoa(n)
			}
			next[base] = n
		}
		seen[c.ID] = true
	}
}

// CheckIDs returns an error naming the first call whose id is empty or
// repeats an earlier call's, and nil when every call has an id of its own,
// as [AssignIDs] leaves them. The adapters' fuzz tests hold their parsers
// to it.
func CheckIDs(calls []tool.Call) error {
	seen := make(map[string]bool, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			return fmt.Errorf("call %d: id %q is empty or repeated", i, c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// Arguments returns a call's arguments as the provider sent them as a
// JSON value, with white space around them trimmed: nil when they are
// missing or null (a call without arguments, which the registry reads as
// {}), and otherwise as they are, object or not, for the registry to
// accept or refuse.
func Arguments(v json.RawMessage) json.RawMessage {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// ErrorMessage returns the message the model reads for a failed result:
// r.Error, or "the tool failed without a message" when it is empty.
func ErrorMessage(r tool.Result) string {
	if r.Error == "" {
		return "the tool failed without a message"
	}
	return r.Error
}

// Shorten returns s cut to n bytes, with "…" after it when it was longer,
// for quoting an error response in a Go error.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// MaxElements bounds the elements the adapters read from the array of a
// response that holds its calls (tool_calls, output items, content
// blocks, parts) and from its choices or candidates. A response of the
// agent's 32 MiB bound held eleven million "{}" calls, which took
// 10 GiB of allocations and 27 s to parse before any bound on the
// number of calls could look at them.
const MaxElements = 8192

// Elements returns the elements of the JSON array raw, reading them one
// at a time and stopping with an error after max of them, so that the
// work is bounded by max and not by the array's length. null or a
// missing value gives no elements.
func Elements(raw json.RawMessage, max int) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("not an array")
	}
	var out []json.RawMessage
	for dec.More() {
		if len(out) == max {
			return nil, fmt.Errorf("more than %d elements", max)
		}
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, err
		}
		out = append(out, el)
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("text after the array")
	}
	return out, nil
}
