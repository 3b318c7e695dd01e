package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"
)

// maxValueDepth bounds the nesting of values converted to Cedar. The
// registry has already bounded the arguments' size and depth; this keeps
// attributes given by the host bounded too.
const maxValueDepth = 64

// cedarValue converts a JSON-like Go value to a Cedar value. Cedar has no
// null and no floating point: null and absent values are left out of
// records and sets (a policy tests them with has), and a non-integer
// number becomes a decimal when it has at most four decimal places, else
// it is left out. Values are converted as data only: a JSON object is
// always a record, never an entity reference or extension value, whatever
// its keys.
func cedarValue(v any, depth int) (cedar.Value, bool) {
	if depth > maxValueDepth {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		return cedar.String(v), true
	case bool:
		return cedar.Boolean(v), true
	case json.Number:
		return numberValue(string(v))
	case float64:
		return numberValue(strconv.FormatFloat(v, 'f', -1, 64))
	case int:
		return cedar.Long(v), true
	case int64:
		return cedar.Long(v), true
	case []string:
		vals := make([]cedar.Value, len(v))
		for i, s := range v {
			vals[i] = cedar.String(s)
		}
		return cedar.NewSet(vals...), true
	case []any:
		vals := make([]cedar.Value, 0, len(v))
		for _, e := range v {
			if cv, ok := cedarValue(e, depth+1); ok {
				vals = append(vals, cv)
			}
		}
		return cedar.NewSet(vals...), true
	case map[string]any:
		m := make(cedar.RecordMap, len(v))
		for k, e := range v {
			if cv, ok := cedarValue(e, depth+1); ok {
				m[cedar.String(k)] = cv
			}
		}
		return cedar.NewRecord(m), true
	}
	return nil, false
}

func numberValue(s string) (cedar.Value, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return cedar.Long(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<62 {
		return cedar.Long(int64(f)), true // 2.0, 1e3
	}
	txt := strconv.FormatFloat(f, 'f', -1, 64)
	if dot := strings.IndexByte(txt, '.'); dot >= 0 && len(txt)-dot-1 > 4 {
		return nil, false
	}
	d, err := cedar.NewDecimalFromFloat(f)
	if err != nil {
		return nil, false
	}
	return d, true
}

// decodeArgs parses checked arguments, numbers kept exact, and returns
// them with their canonical encoding: keys sorted, no insignificant space.
func decodeArgs(args []byte) (map[string]any, []byte, error) {
	m := map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, nil, fmt.Errorf("arguments: %w", err)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	return m, bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
