package mcptool

import "testing"

// TestLedgerPassSpellings: the flood gate reads each event for what it
// is, however the server spells it: a member named "METHOD" or
// "\u006dethod" is a method to encoding/json, which go-sdk decodes with,
// so a notification so spelt counts as one; a response passes whatever
// the gate says, and so does an event that is not one message.
func TestLedgerPassSpellings(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		gated       bool
	}{
		{"plain", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n", true},
		{"upper case", "data: {\"jsonrpc\":\"2.0\",\"METHOD\":\"notifications/message\",\"params\":{}}\n", true},
		{"escaped", "data: {\"jsonrpc\":\"2.0\",\"\\u006dethod\":\"ping\",\"id\":1}\n", true},
		{"split data lines", "data: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"ping\",\"id\":2}\n", true},
		{"response", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"method\"}}\n", false},
		{"not JSON", "data: method?\n", false},
	} {
		l := newStreamLedger(defaultStreamBounds)
		l.gate = newFloodGate(floodBounds{rate: 1e-9, burst: 1, byteRate: 1 << 30, byteBurst: 1 << 30, inFlight: 256})
		first, second := l.pass([]byte(tc.event)), l.pass([]byte(tc.event))
		if !first || second == tc.gated {
			t.Errorf("%s: passed %v then %v, want the second gated: %v", tc.name, first, second, tc.gated)
		}
	}
}
