package natstool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/miniopenclaw/tool"
)

// Headers of the messages between an importer and a worker. Their values
// are plain ASCII.
const (
	// HeaderTimeout carries the time the caller has left for a call, in
	// milliseconds. The worker runs the call with a context that ends
	// then, whatever its own clock says.
	HeaderTimeout = "Clawtool-Timeout-Ms"

	// HeaderKind says what a message on a call's reply subject is: see
	// the kind constants below. A reply without it is a result.
	HeaderKind = "Clawtool-Kind"

	// HeaderObject names the object, in the bucket named by
	// HeaderBucket, that holds a result too large for one message.
	HeaderObject = "Clawtool-Result-Object"

	// HeaderBucket names the JetStream object store bucket of
	// HeaderObject.
	HeaderBucket = "Clawtool-Result-Bucket"
)

// Kinds of message on a call's reply subject.
const (
	kindResult    = "result"
	kindHeartbeat = "heartbeat"
	kindProgress  = "progress"
	kindBusy      = "busy"
)

// Metadata keys of a service's endpoints and of the service itself.
const (
	// MetadataTool holds an endpoint's tool definition, as JSON (see
	// [Definition]).
	MetadataTool = "clawtool.tool"

	// MetadataProtocol holds the version of this package's wire
	// protocol, on the service.
	MetadataProtocol = "clawtool.protocol"

	protocolVersion = "1"
)

// cancelSubject is where the workers of the service whose subjects start
// with base hear of calls whose callers gave up; the message is the call's
// reply subject. "$" cannot appear in a tool's name.
func cancelSubject(base string) string { return base + ".$cancel" }

// ChangeSubject is where a [Service] announces that it started, changed
// its tools, or stopped, so that importers resync at once rather than at
// their next periodic scan. The message is a JSON [Announcement].
const ChangeSubject = "clawtool.changed"

// An Announcement is published on [ChangeSubject].
type Announcement struct {
	// Service and ID identify the micro service instance.
	Service string `json:"service"`
	ID      string `json:"id"`
	// Stopped is set when the instance stopped serving.
	Stopped bool `json:"stopped,omitempty"`
	// Replaces is the id of the instance this one replaced when the
	// service's tools changed; that instance no longer serves.
	Replaces string `json:"replaces,omitempty"`
}

// A Definition is what a service says about one of its tools, in the
// metadata of the tool's endpoint.
type Definition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  annotations     `json:"annotations,omitzero"`
	// TimeoutMs is the tool's own time limit on the worker, in
	// milliseconds; 0 when it has none of its own.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// annotations is the wire form of tool.Annotations.
type annotations struct {
	Title       string `json:"title,omitempty"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Idempotent  bool   `json:"idempotent,omitempty"`
	OpenWorld   bool   `json:"open_world,omitempty"`
}

// definitionOf describes t for the endpoint metadata.
func definitionOf(t tool.Tool) Definition {
	o := tool.OptionsOf(t)
	a := o.Annotations
	d := Definition{
		Name:         t.Name(),
		Description:  t.Description(),
		InputSchema:  t.Parameters(),
		OutputSchema: o.OutputSchema,
		Annotations: annotations{
			Title: a.Title, ReadOnly: a.ReadOnly, Destructive: a.Destructive,
			Idempotent: a.Idempotent, OpenWorld: a.OpenWorld,
		},
	}
	if o.Timeout > 0 {
		d.TimeoutMs = o.Timeout.Milliseconds()
	}
	return d
}

// toolAnnotations returns the definition's annotations as the core type.
func (d *Definition) toolAnnotations() tool.Annotations {
	a := d.Annotations
	return tool.Annotations{Title: a.Title, ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
}

// formatTimeout renders the time left before deadline for HeaderTimeout;
// at least 1 ms, so that an exhausted budget still reads as a limit.
func formatTimeout(left time.Duration) string {
	return strconv.FormatInt(max(left.Milliseconds(), 1), 10)
}

// parseTimeout reads HeaderTimeout; ok is false when it is absent.
func parseTimeout(v string) (d time.Duration, ok bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 || ms > int64(24*time.Hour/time.Millisecond)*365 {
		return 0, false, fmt.Errorf("header %s: %q is not a positive number of milliseconds", HeaderTimeout, v)
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// progressReport is the body of a progress message.
type progressReport struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}
