package mcptool

import (
	"strconv"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// errInexactID is the message of the refusal of a request whose id the
// server cannot echo exactly.
const errInexactID = "Invalid Request: an id must be a string or an integer between -2^53 and 2^53, " +
	"written without a fraction, an exponent or a negative zero (the answer would carry another id)"

// exactIDs reports whether every "id" member of the JSON-RPC message in
// data (or of each message of a batch) is one the server answers with
// exactly as sent: a string, null, or an integer of magnitude at most
// 2^53 in its shortest form. go-sdk reads an id as a float64 and answers with it
// made an int64, so 9007199254740993 was answered as 9007199254740992,
// 1.5 as 1 and 1e3 as 1000: the client took the answer for another
// request's (TestRequestIDsEchoedExactly). Every member named id counts,
// the repeated ones too. Data that is not well-formed JSON is left to
// the JSON-RPC reader, which refuses it: true.
func exactIDs(data []byte) bool {
	i := jsontext.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return objectIDsExact(data, i)
	}
	i++
	for {
		i = jsontext.SkipSpace(data, i)
		if i >= len(data) || data[i] == ']' {
			return true
		}
		end, err := jsontext.SkipValue(data, i, 1, directMaxDepth)
		if err != nil {
			return true
		}
		if !objectIDsExact(data[:end], i) {
			return false
		}
		i = jsontext.SkipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

// objectIDsExact is exactIDs of the object at data[i].
func objectIDsExact(data []byte, i int) bool {
	if i >= len(data) || data[i] != '{' {
		return true
	}
	i++
	for {
		i = jsontext.SkipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return true
		}
		key, next, err := jsontext.ReadString(data, i, nil)
		if err != nil {
			return true
		}
		i = jsontext.SkipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return true
		}
		start := jsontext.SkipSpace(data, i+1)
		end, err := jsontext.SkipValue(data, start, 1, directMaxDepth)
		if err != nil {
			return true
		}
		if string(key) == "id" && !exactID(data[start:end]) {
			return false
		}
		i = jsontext.SkipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i++
		}
	}
}

// maxExactID is the largest magnitude of an integer id go-sdk echoes
// exactly: it reads ids as float64s.
const maxExactID = 1 << 53

// exactID reports whether the JSON value v is an id the server echoes
// exactly (see exactIDs): a string, null, or an integer of magnitude at
// most 2^53 in its shortest form.
func exactID(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	if v[0] == '"' || string(v) == "null" {
		return true
	}
	if !jsontext.IsInteger(v) {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	var buf [24]byte
	return err == nil && n >= -maxExactID && n <= maxExactID && string(strconv.AppendInt(buf[:0], n, 10)) == string(v)
}
