package sandbox

import (
	"fmt"
	"strings"
)

// A Report says which layers this host offers.
type Report struct {
	Layers []LayerStatus
	// fork: spares may start their commands in fork mode (helper.ForkEnv).
	fork bool
}

// A LayerStatus is one layer of a [Report].
type LayerStatus struct {
	Layer     Layer
	Available bool
	// Detail says what was checked, or why the layer is missing.
	Detail string
}

// Has reports whether the host offers layer l.
func (r Report) Has(l Layer) bool {
	for _, s := range r.Layers {
		if s.Layer == l {
			return s.Available
		}
	}
	return false
}

// check returns a *LayerError for the first layer of need the host lacks.
func (r Report) check(need []Layer) error {
	for _, l := range need {
		if r.Has(l) {
			continue
		}
		reason := "not offered by this platform"
		for _, s := range r.Layers {
			if s.Layer == l {
				reason = s.Detail
			}
		}
		return &LayerError{Layer: l, Reason: reason}
	}
	return nil
}

// String renders the report as one line per layer: "ok" or "missing", the
// layer and the detail.
func (r Report) String() string {
	var b strings.Builder
	for _, s := range r.Layers {
		state := "ok"
		if !s.Available {
			state = "missing"
		}
		fmt.Fprintf(&b, "%-7s %-13s %s\n", state, s.Layer, s.Detail)
	}
	return b.String()
}

// probeForRun is the report runs check their policy against; tests replace
// it to stand for a host without some layer.
var probeForRun = Probe
