package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

// Limits of a [KV] store. The schema states them to the model, and Execute
// enforces them for callers that skip the Registry.
const (
	kvMaxKeys       = 1000    // keys in the store
	kvMaxKeyChars   = 256     // characters in a key or prefix
	kvMaxValueChars = 16384   // characters in a value
	kvMaxBytes      = 1 << 20 // bytes of all keys and values together
	kvMaxListed     = 200     // keys shown by one list
	// A KV of NewKVPerCaller keeps at most kvMaxCallers stores, and
	// kvMaxAllBytes of keys and values in all of them together.
	kvMaxCallers  = 256
	kvMaxAllBytes = 64 << 20
)

// kvSchema is written by hand: the interface way of defining a tool. It
// uses only keywords every model API understands; which fields an
// operation needs is checked by Execute.
var kvSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "op": {
      "type": "string",
      "enum": ["set", "get", "delete", "list"],
      "description": "set stores value under key, replacing any old value; get returns the value of key; delete removes key; list shows the keys, in order, that start with prefix."
    },
    "key": {
      "type": "string",
      "minLength": 1,
      "maxLength": 256,
      "description": "The key, for set, get and delete."
    },
    "value": {
      "type": "string",
      "maxLength": 16384,
      "description": "The text to store, for set."
    },
    "prefix": {
      "type": "string",
      "maxLength": 256,
      "description": "For list: show only the keys that start with it. Empty or absent lists every key."
    }
  },
  "required": ["op"],
  "additionalProperties": false
}`)

// KV is a key-value store for text, served as the tool "kv": a model keeps
// notes in it that must outlive one step of its work. It implements
// [tool.Tool] and [tool.Configured] by hand, with a hand-written schema.
//
// The store lives in memory for as long as the KV value does, so a
// long-running server (clawtool serving MCP, say) keeps it across calls and
// a one-shot clawtool call starts empty. It holds at most 1000 keys and
// 1 MiB of keys and values; keys have 1 to 256 characters and values up
// to 16384. A KV is safe for concurrent use. Make one with [NewKV], whose
// one store every caller shares, or [NewKVPerCaller], which keeps a store
// for each caller: a server of several users needs the latter, or each
// reads, overwrites and fills the others' notes.
type KV struct {
	caller func(context.Context) string // nil: one store for every call
	mu     sync.Mutex
	stores map[string]*kvStore // by caller
	bytes  int                 // of every store together
}

// A kvStore is the store of one caller.
type kvStore struct {
	data  map[string]string
	bytes int // len of every key and value in data
}

// NewKV returns a KV with one empty store, which every caller shares.
func NewKV() *KV {
	return &KV{stores: map[string]*kvStore{"": {data: map[string]string{}}}}
}

// NewKVPerCaller returns a KV that keeps a store for each caller: caller
// names the caller of a call from its context (the ID of the principal
// the call is made for, say), and calls of one name share a store, with
// the limits of [KV]. A store is made at its caller's first set and
// dropped when its last key is deleted; at most 256 callers keep one, and
// all stores together hold at most 64 MiB, past which a set is refused
// with an error saying so.
func NewKVPerCaller(caller func(ctx context.Context) string) *KV {
	return &KV{caller: caller, stores: map[string]*kvStore{}}
}

// store returns the store of ctx's caller, made when create is set and
// there is room; nil when it has none.
func (kv *KV) store(ctx context.Context, create bool) (*kvStore, error) {
	name := ""
	if kv.caller != nil {
		name = kv.caller(ctx)
	}
	st := kv.stores[name]
	if st == nil && create {
		if len(kv.stores) >= kvMaxCallers {
			return nil, fmt.Errorf("no room for a store of yours: %d callers keep one", kvMaxCallers)
		}
		st = &kvStore{data: map[string]string{}}
		kv.stores[name] = st
	}
	return st, nil
}

// Name returns "kv".
func (*KV) Name() string { return "kv" }

// Description tells the model what the store is for and what it holds.
func (*KV) Description() string {
	return "A small key-value store for notes that must outlive one step of your work: set a key to some text, get it back, delete it, or list the keys. " +
		"It holds up to 1000 keys and 1 MiB of text, and lasts as long as the program serving it."
}

// Parameters returns the hand-written schema. The slice is shared: callers
// must not modify it.
func (*KV) Parameters() json.RawMessage { return kvSchema }

// Options reports that the store changes state (set and delete overwrite
// and remove data), that repeating a call has no further effect, a short
// timeout, and that calls run inline: every operation is a map access.
func (*KV) Options() tool.Options {
	return tool.Options{
		Annotations: tool.Annotations{Title: "Key-value store", Destructive: true, Idempotent: true},
		Timeout:     5 * time.Second,
		Inline:      true,
	}
}

// kvArgs are the arguments of a call. Pointers tell a missing field from
// an empty one.
type kvArgs struct {
	Op     *string `json:"op"`
	Key    *string `json:"key"`
	Value  *string `json:"value"`
	Prefix *string `json:"prefix"`
}

// Execute runs one operation. Arguments that do not fit the operation give
// a [*tool.ArgumentError]; a get of a missing key or a set that would
// overflow the store gives an error for the model to read. Execute checks
// its arguments itself, since it may be called without a Registry, but
// only a Registry rejects duplicate keys and invalid UTF-8 in the JSON.
func (kv *KV) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	in, err := decodeKVArgs(args)
	if err != nil {
		return tool.Result{}, err
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	switch *in.Op {
	case "set":
		return kv.set(ctx, *in.Key, *in.Value)
	case "get":
		return kv.get(ctx, *in.Key)
	case "delete":
		return kv.delete(ctx, *in.Key), nil
	default: // "list"
		prefix := ""
		if in.Prefix != nil {
			prefix = *in.Prefix
		}
		return kv.list(ctx, prefix), nil
	}
}

// decodeKVArgs parses and checks args, so that Execute is safe to call
// directly with anything.
func decodeKVArgs(args json.RawMessage) (kvArgs, error) {
	var in kvArgs
	bad := func(v tool.Violation) error {
		return &tool.ArgumentError{Tool: "kv", Violations: []tool.Violation{v}, Args: shorten(string(args), 300)}
	}
	if len(bytes.TrimSpace(args)) == 0 || bytes.TrimSpace(args)[0] != '{' {
		return in, bad(tool.Violation{Expected: "a JSON object"})
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, bad(tool.Violation{Expected: "a JSON object with the properties op, key, value and prefix", Got: err.Error()})
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return in, bad(tool.Violation{Expected: "the end of the arguments after the object", Got: "more data"})
	}
	if in.Op == nil {
		return in, bad(tool.Violation{Pointer: "/op", Expected: `one of "set", "get", "delete", "list"`, Got: "nothing"})
	}
	needKey, needValue := false, false
	switch *in.Op {
	case "set":
		needKey, needValue = true, true
	case "get", "delete":
		needKey = true
	case "list":
	default:
		return in, bad(tool.Violation{Pointer: "/op", Expected: `one of "set", "get", "delete", "list"`, Got: fmt.Sprintf("%q", shorten(*in.Op, 40))})
	}
	switch {
	case needKey && in.Key == nil:
		return in, bad(tool.Violation{Pointer: "/key", Expected: fmt.Sprintf("a key (op %q needs one)", *in.Op), Got: "nothing"})
	case needValue && in.Value == nil:
		return in, bad(tool.Violation{Pointer: "/value", Expected: `the text to store (op "set" needs it)`, Got: "nothing"})
	case in.Key != nil && (*in.Key == "" || utf8.RuneCountInString(*in.Key) > kvMaxKeyChars):
		return in, bad(tool.Violation{Pointer: "/key", Expected: fmt.Sprintf("a key of 1 to %d characters", kvMaxKeyChars), Got: fmt.Sprintf("%d characters", utf8.RuneCountInString(*in.Key))})
	case in.Value != nil && utf8.RuneCountInString(*in.Value) > kvMaxValueChars:
		return in, bad(tool.Violation{Pointer: "/value", Expected: fmt.Sprintf("at most %d characters", kvMaxValueChars), Got: fmt.Sprintf("%d characters", utf8.RuneCountInString(*in.Value)),
			Hint: "store a summary, or split the text over several keys"})
	case in.Prefix != nil && utf8.RuneCountInString(*in.Prefix) > kvMaxKeyChars:
		return in, bad(tool.Violation{Pointer: "/prefix", Expected: fmt.Sprintf("at most %d characters", kvMaxKeyChars), Got: fmt.Sprintf("%d characters", utf8.RuneCountInString(*in.Prefix))})
	}
	return in, nil
}

// set, get, delete and list run with kv.mu held.

func (kv *KV) set(ctx context.Context, key, value string) (tool.Result, error) {
	st, err := kv.store(ctx, true)
	if err != nil {
		return tool.Result{}, err
	}
	old, replacing := st.data[key]
	size := st.bytes + len(key) + len(value)
	if replacing {
		size -= len(key) + len(old)
	} else if len(st.data) >= kvMaxKeys {
		return tool.Result{}, fmt.Errorf("the store is full (%d keys); delete keys you no longer need, then set %q again", kvMaxKeys, shorten(key, 60))
	}
	if size > kvMaxBytes {
		return tool.Result{}, fmt.Errorf("the store would hold %d bytes, over its limit of %d; delete keys you no longer need or store less", size, kvMaxBytes)
	}
	if all := kv.bytes - st.bytes + size; kv.caller != nil && all > kvMaxAllBytes {
		kv.dropIfEmpty(ctx, st)
		return tool.Result{}, fmt.Errorf("the stores of all callers would hold %d bytes, over their limit of %d; store less", all, kvMaxAllBytes)
	}
	st.data[key] = value
	kv.bytes += size - st.bytes
	st.bytes = size
	verb := "stored"
	if replacing {
		verb = "replaced"
	}
	return tool.Result{Output: fmt.Sprintf("%s %q (%s)", verb, key, count(utf8.RuneCountInString(value), "character"))}, nil
}

func (kv *KV) get(ctx context.Context, key string) (tool.Result, error) {
	st, _ := kv.store(ctx, false)
	if st == nil {
		return tool.Result{}, fmt.Errorf("no key %q; the store is empty", key)
	}
	value, ok := st.data[key]
	if !ok {
		return tool.Result{}, fmt.Errorf("no key %q; the store has %s (see them with {\"op\":\"list\"})", key, count(len(st.data), "key"))
	}
	return tool.Result{Output: value}, nil
}

func (kv *KV) delete(ctx context.Context, key string) tool.Result {
	st, _ := kv.store(ctx, false)
	old, ok := "", false
	if st != nil {
		old, ok = st.data[key]
	}
	if !ok {
		return tool.Result{Output: fmt.Sprintf("no key %q; nothing to delete", key)}
	}
	delete(st.data, key)
	st.bytes -= len(key) + len(old)
	kv.bytes -= len(key) + len(old)
	kv.dropIfEmpty(ctx, st)
	return tool.Result{Output: fmt.Sprintf("deleted %q", key)}
}

// dropIfEmpty forgets st, the store of ctx's caller, when it is empty and
// kv keeps a store per caller.
func (kv *KV) dropIfEmpty(ctx context.Context, st *kvStore) {
	if kv.caller != nil && len(st.data) == 0 {
		delete(kv.stores, kv.caller(ctx))
	}
}

func (kv *KV) list(ctx context.Context, prefix string) tool.Result {
	st, _ := kv.store(ctx, false)
	var keys []string
	if st != nil {
		keys = make([]string, 0, len(st.data))
		for k := range st.data {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		if prefix != "" {
			return tool.Result{Output: fmt.Sprintf("no keys start with %q", prefix)}
		}
		return tool.Result{Output: "the store is empty"}
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i == kvMaxListed {
			fmt.Fprintf(&b, "… and %d more; list with a longer prefix to see them", len(keys)-i)
			break
		}
		if plain(k) {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
		b.WriteByte('\n')
	}
	return tool.Result{Output: strings.TrimSuffix(b.String(), "\n")}
}

// count returns "1 key", "2 keys".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// plain reports whether a key can be listed as it is: one line of
// printable text that does not start with a quote or end in a space.
func plain(k string) bool {
	if k[0] == '"' || k[0] == ' ' || k[len(k)-1] == ' ' {
		return false
	}
	for _, r := range k {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// shorten cuts s to at most n bytes at a rune boundary, marking the cut,
// and replaces invalid UTF-8, for echoing input back in messages.
func shorten(s string, n int) string {
	if len(s) > 4*n {
		s = s[:4*n]
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
