// Package jsonduration reads a duration written in JSON the way
// clawtool's configuration and policy files write one: a Go duration
// string ("30s", "1m30s") or a number of milliseconds (30000).
package jsonduration

import (
	"encoding/json"
	"errors"
	"time"
)

// Parse reads b, a JSON string holding a Go duration or a JSON number of
// milliseconds. Anything else is an error saying which forms it takes.
func Parse(b []byte) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return time.ParseDuration(s)
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return 0, errors.New(`a duration is a string such as "30s" or a number of milliseconds`)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}
