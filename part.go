package tool

import (
	"errors"
	"fmt"
	"strings"
)

// A Part is a piece of a successful result that is not plain text: an
// image, an audio clip, or a resource, embedded or linked. Text always goes
// in [Result.Output]; Parts come after it, in order.
//
// The fields a Part needs depend on its Type:
//
//   - [PartImage] and [PartAudio]: MIMEType ("image/png", "audio/wav"…)
//     and the raw bytes in Data.
//   - [PartResource]: the resource's URI, its MIMEType, and its contents
//     in Text or (for binary contents) in Data: one of them, not empty,
//     because MCP cannot carry an empty embedded resource.
//   - [PartResourceLink]: the URI and Name of a resource the model or the
//     program can fetch; MIMEType and Description are optional.
//
// [Registry.Execute] turns a success carrying a Part that [Part.Validate]
// refuses into a failure of kind [KindToolError], so that what reaches
// a provider or an MCP client is always well formed. Parts are not cut by
// the result budget, which bounds text.
//
// In the JSON form of a Result, Data is base64, as encoding/json writes
// byte slices.
type Part struct {
	// Type says what the part is; see the constants of type PartType.
	Type PartType `json:"type"`
	// MIMEType is the media type of Data or Text.
	MIMEType string `json:"mime_type,omitempty"`
	// Data holds the raw bytes of an image, an audio clip or a binary
	// resource.
	Data []byte `json:"data,omitempty"`
	// Text holds the contents of a text resource.
	Text string `json:"text,omitempty"`
	// URI identifies a resource.
	URI string `json:"uri,omitempty"`
	// Name is the name of a linked resource.
	Name string `json:"name,omitempty"`
	// Description optionally tells the model what a linked resource is.
	Description string `json:"description,omitempty"`
}

// A PartType names the kind of a [Part]. New types may be added; a
// consumer that does not know a type should describe the part with
// [Part.String].
type PartType string

// The types of Part.
const (
	// PartImage is an image: MIMEType and Data.
	PartImage PartType = "image"
	// PartAudio is an audio clip: MIMEType and Data.
	PartAudio PartType = "audio"
	// PartResource is an embedded resource: URI, MIMEType, and Text or
	// Data.
	PartResource PartType = "resource"
	// PartResourceLink is a link to a resource: URI and Name.
	PartResourceLink PartType = "resource_link"
)

// Image returns an image Part holding data of the given media type.
func Image(mimeType string, data []byte) Part {
	return Part{Type: PartImage, MIMEType: mimeType, Data: data}
}

// Audio returns an audio Part holding data of the given media type.
func Audio(mimeType string, data []byte) Part {
	return Part{Type: PartAudio, MIMEType: mimeType, Data: data}
}

// TextResource returns a Part embedding the text contents of the resource
// at uri.
func TextResource(uri, mimeType, text string) Part {
	return Part{Type: PartResource, URI: uri, MIMEType: mimeType, Text: text}
}

// BlobResource returns a Part embedding the binary contents of the resource
// at uri.
func BlobResource(uri, mimeType string, data []byte) Part {
	return Part{Type: PartResource, URI: uri, MIMEType: mimeType, Data: data}
}

// ResourceLink returns a Part linking to the resource at uri, called name.
func ResourceLink(uri, name string) Part {
	return Part{Type: PartResourceLink, URI: uri, Name: name}
}

// String describes p in one line for a reader of text only, such as a
// model whose API takes text tool results: "[image image/png, 68 bytes]".
// A text resource is its header line followed by its text.
func (p Part) String() string {
	switch p.Type {
	case PartImage, PartAudio:
		return fmt.Sprintf("[%s %s, %d bytes]", p.Type, p.MIMEType, len(p.Data))
	case PartResource:
		if len(p.Data) == 0 {
			return fmt.Sprintf("[resource %s %s]\n%s", p.URI, p.MIMEType, p.Text)
		}
		return fmt.Sprintf("[resource %s %s, %d bytes]", p.URI, p.MIMEType, len(p.Data))
	case PartResourceLink:
		s := fmt.Sprintf("[resource link %s: %s]", p.Name, p.URI)
		if p.Description != "" {
			s += " " + p.Description
		}
		return s
	}
	return fmt.Sprintf("[%s part]", p.Type)
}

// Validate reports what makes p malformed: a missing field its Type needs,
// or a Type this package does not know. It returns nil for a well-formed
// Part.
func (p Part) Validate() error {
	if why := p.problem(); why != "" {
		return errors.New(why)
	}
	return nil
}

func (p Part) problem() string {
	switch p.Type {
	case PartImage, PartAudio:
		switch {
		case !strings.HasPrefix(p.MIMEType, string(p.Type)+"/") || len(p.MIMEType) == len(p.Type)+1:
			return fmt.Sprintf("an %s part needs a MIME type of the form %s/…, not %q", p.Type, p.Type, p.MIMEType)
		case len(p.Data) == 0:
			return fmt.Sprintf("an %s part needs data", p.Type)
		}
	case PartResource:
		switch {
		case p.URI == "":
			return "a resource needs a URI"
		case p.Text != "" && len(p.Data) > 0:
			return "a resource holds text or data, not both"
		case p.Text == "" && len(p.Data) == 0:
			return "a resource needs its contents in text or data (an empty resource is better sent as a link)"
		}
	case PartResourceLink:
		switch {
		case p.URI == "":
			return "a resource link needs a URI"
		case p.Name == "":
			return "a resource link needs a name"
		}
	case "":
		return "a part needs a type"
	default:
		return fmt.Sprintf("unknown part type %q (known: image, audio, resource, resource_link)", p.Type)
	}
	return ""
}
