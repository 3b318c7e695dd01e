package mcptool

import (
	"fmt"
	"testing"
)

// TestRequestShareLeavesRoomForOthers: with the bounds alone (256 POSTs
// of one caller, 4,096 of all; 64 MiB of bodies of one caller, 256 MiB
// of all), 16 principals held every request slot and 4 every byte, and
// every other principal got 429 until theirs were answered. Now the last
// quarter of each total is kept for callers that hold less than a
// sixteenth of their own bound (16 requests, 4 MiB): a newcomer still
// gets 16 requests behind 16 principals (or 64), and 4 MiB of bodies
// behind 4. The control: without the share, the newcomer gets nothing.
func TestRequestShareLeavesRoomForOthers(t *testing.T) {
	requests := func(g *requestGate, principals int) (newcomer int) {
		for p := range principals {
			for {
				if _, over := g.take(fmt.Sprintf("mallory%d", p)); over != "" {
					break
				}
			}
		}
		for newcomer < DefaultMaxRequestsInFlight {
			if _, over := g.take("ann"); over != "" {
				break
			}
			newcomer++
		}
		return newcomer
	}
	const chunk = bodyChunk
	bytes := func(g *requestGate, principals int) (newcomer int64) {
		for p := range principals {
			for g.grow(fmt.Sprintf("mallory%d", p), chunk) == "" {
			}
		}
		for newcomer < DefaultMaxRequestBytesInFlight && g.grow("ann", chunk) == "" {
			newcomer += chunk
		}
		return newcomer
	}
	control := newRequestGate(RequestLimits{})
	control.noShare = true
	if n := requests(control, 16); n != 0 {
		t.Fatalf("control: Ann got %d requests behind 16 principals without the share; the attack did not work", n)
	}
	control = newRequestGate(RequestLimits{})
	control.noShare = true
	if n := bytes(control, 4); n != 0 {
		t.Fatalf("control: Ann got %d bytes behind 4 principals without the share; the attack did not work", n)
	}
	for _, principals := range []int{16, 64} {
		if n := requests(newRequestGate(RequestLimits{}), principals); n < DefaultMaxRequestsInFlight/16 {
			t.Errorf("Ann got %d requests behind %d principals, want at least %d", n, principals, DefaultMaxRequestsInFlight/16)
		}
	}
	if n := bytes(newRequestGate(RequestLimits{}), 4); n < DefaultMaxRequestBytesInFlight/16 {
		t.Errorf("Ann got %d bytes behind 4 principals, want at least %d", n, DefaultMaxRequestBytesInFlight/16)
	}
	if n := requests(newRequestGate(RequestLimits{}), 0); n != DefaultMaxRequestsInFlight {
		t.Errorf("Ann alone got %d requests, want %d", n, DefaultMaxRequestsInFlight)
	}
	if n := bytes(newRequestGate(RequestLimits{}), 0); n != DefaultMaxRequestBytesInFlight {
		t.Errorf("Ann alone got %d bytes, want %d", n, DefaultMaxRequestBytesInFlight)
	}
}
