package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// errCutShort is the error for a stream that ends before the model's reply
// is complete.
var errCutShort = errors.New("the model's stream ended before its reply was complete")

// stream sends a request with streaming on, calls onText with each piece
// of the reply's text as it arrives, and returns the whole reply in the
// shape the API gives without streaming, for the conversation to read. A
// server that answers with plain JSON instead of an event stream is read
// as a reply without streaming; streamed is then false and onText was not
// called.
func (m *Model) stream(ctx context.Context, body []byte, onText func(string)) (reply []byte, streamed bool, err error) {
	resp, err := m.send(ctx, body)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
		if err != nil {
			return nil, false, fmt.Errorf("reading the model's response: %w", err)
		}
		if len(data) > maxResponse {
			return nil, false, errTooLarge
		}
		return data, false, nil
	}
	var acc interface {
		event(name string, data []byte) (done bool, err error)
		// complete reports whether the reply is whole without the
		// stream's final event, which some servers leave out.
		complete() bool
		reply() ([]byte, error)
	}
	if m.api == Messages {
		acc = &messagesStream{onText: onText}
	} else {
		acc = &chatStream{onText: onText}
	}
	r := bufio.NewReader(&limitedReader{r: resp.Body, n: maxResponse})
	err = readEvents(r, acc.event)
	if errors.Is(err, errCutShort) && acc.complete() {
		err = nil
	}
	if err != nil {
		return nil, true, err
	}
	reply, err = acc.reply()
	return reply, true, err
}

// limitedReader reads at most n bytes from r, then fails with errTooLarge.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	p = p[:min(int64(len(p)), l.n)]
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// readEvents reads server-sent events from r and calls handle with each
// event's name and data until handle reports the reply done. The end of
// the stream before that is errCutShort.
func readEvents(r *bufio.Reader, handle func(name string, data []byte) (bool, error)) error {
	var name string
	var data []byte
	hasData := false
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole (the stream's size is bounded).
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF {
				return errCutShort
			}
			if errors.Is(err, errTooLarge) {
				return errTooLarge
			}
			return fmt.Errorf("reading the model's stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if hasData {
				done, err := handle(name, data)
				if done || err != nil {
					return err
				}
			}
			name, data, hasData = "", data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
		// Comments (lines starting with ":"), id and retry mean nothing here.
	}
}

// streamError describes an error the API sent inside a stream.
func streamError(data []byte) error {
	s := string(data)
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return fmt.Errorf("the model API sent an error in its stream: %s", s)
}

// chatStream gathers a Chat Completions stream: chunks of
// {"choices":[{"delta":{"content":…,"tool_calls":[…]},"finish_reason":…}]}
// and a last "data: [DONE]".
type chatStream struct {
	onText  func(string)
	text    strings.Builder
	hasText bool
	calls   []*streamedCall
	byIndex map[int]*streamedCall
	finish  string
}

type streamedCall struct {
	id         string
	name, args strings.Builder
}

func (c *chatStream) event(_ string, data []byte) (bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return true, nil
	}
	var chunk struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &chunk); err != nil {
		return false, fmt.Errorf("the model's stream has an event that is not a JSON chunk: %v", err)
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		return false, streamError(data)
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // the loop asks for one choice
		}
		if s := ch.Delta.Content; s != nil && *s != "" {
			c.text.WriteString(*s)
			c.hasText = true
			if c.onText != nil {
				c.onText(*s)
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			sc, err := c.call(tc.Index, tc.ID)
			if err != nil {
				return false, err
			}
			sc.add(tc.Function.Name, tc.Function.Arguments)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			c.finish = *ch.FinishReason
		}
	}
	return false, nil
}

// call finds the call a tool_calls delta continues: the one at index,
// unless the delta starts a call with a new id there (some servers give
// every call index 0). A stream that starts more calls than a response
// may hold (providercall.MaxElements) is refused there, before the calls
// it gathered are parsed and counted.
func (c *chatStream) call(index int, id string) (*streamedCall, error) {
	if c.byIndex == nil {
		c.byIndex = make(map[int]*streamedCall)
	}
	sc := c.byIndex[index]
	if sc == nil || id != "" && sc.id != "" && sc.id != id {
		if len(c.calls) == providercall.MaxElements {
			return nil, fmt.Errorf("the model's stream starts more than %d tool calls", providercall.MaxElements)
		}
		sc = &streamedCall{}
		c.byIndex[index] = sc
		c.calls = append(c.calls, sc)
	}
	if id != "" {
		sc.id = id
	}
	return sc, nil
}

func (sc *streamedCall) add(name, args string) {
	sc.name.WriteString(name)
	sc.args.WriteString(args)
}

func (c *chatStream) complete() bool { return c.finish != "" }

// reply returns the gathered reply as a Chat Completions response.
func (c *chatStream) reply() ([]byte, error) {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	msg := struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	if c.hasText {
		text := c.text.String()
		msg.Content = &text
	}
	for _, sc := range c.calls {
		msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: sc.id, Type: "function", Function: function{sc.name.String(), sc.args.String()}})
	}
	type choice struct {
		Index        int    `json:"index"`
		Message      any    `json:"message"`
		FinishReason string `json:"finish_reason"`
	}
	return jsonobj.Marshal(struct {
		Choices []choice `json:"choices"`
	}{[]choice{{Message: msg, FinishReason: c.finish}}})
}

// messagesStream gathers a Messages stream: message_start, then for each
// content block content_block_start, content_block_delta… and
// content_block_stop, then message_delta and message_stop.
type messagesStream struct {
	onText     func(string)
	blocks     []*streamedBlock
	byIndex    map[int]*streamedBlock
	stopReason json.RawMessage
}

// A streamedBlock is one content block: its fields as content_block_start
// gave them, and what the deltas added.
type streamedBlock struct {
	fields    map[string]json.RawMessage
	typ       string
	text      strings.Builder // text_delta
	thinking  strings.Builder // thinking_delta
	signature string          // signature_delta
	input     strings.Builder // input_json_delta
	citations []json.RawMessage
}

func (m *messagesStream) event(name string, data []byte) (bool, error) {
	var ev struct {
		Type         string          `json:"type"`
		Index        int             `json:"index"`
		ContentBlock json.RawMessage `json:"content_block"`
		Delta        struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			PartialJSON string          `json:"partial_json"`
			Citation    json.RawMessage `json:"citation"`
			StopReason  json.RawMessage `json:"stop_reason"`
		} `json:"delta"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return false, fmt.Errorf("the model's stream has an event that is not JSON: %v", err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	switch ev.Type {
	case "error":
		return false, streamError(data)
	case "content_block_start":
		if len(m.blocks) == providercall.MaxElements {
			return false, fmt.Errorf("the model's stream starts more than %d content blocks", providercall.MaxElements)
		}
		b := &streamedBlock{}
		if err := json.Unmarshal(ev.ContentBlock, &b.fields); err != nil || b.fields == nil {
			return false, fmt.Errorf("the model's stream starts a content block that is not an object: %s", providerText(ev.ContentBlock))
		}
		_ = json.Unmarshal(b.fields["type"], &b.typ)
		if m.byIndex == nil {
			m.byIndex = make(map[int]*streamedBlock)
		}
		m.byIndex[ev.Index] = b
		m.blocks = append(m.blocks, b)
	case "content_block_delta":
		b := m.byIndex[ev.Index]
		if b == nil {
			return false, fmt.Errorf("the model's stream sends a delta for content block %d, which it did not start", ev.Index)
		}
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			b.text.WriteString(d.Text)
			if m.onText != nil && d.Text != "" {
				m.onText(d.Text)
			}
		case "input_json_delta":
			b.input.WriteString(d.PartialJSON)
		case "thinking_delta":
			b.thinking.WriteString(d.Thinking)
		case "signature_delta":
			b.signature = d.Signature
		case "citations_delta":
			b.citations = append(b.citations, d.Citation)
		}
	case "message_delta":
		if len(ev.Delta.StopReason) > 0 {
			m.stopReason = ev.Delta.StopReason
		}
	case "message_stop":
		return true, nil
	}
	// message_start, content_block_stop, ping and events this package
	// does not know carry nothing the reply needs.
	return false, nil
}

// providerText shortens raw JSON for an error message.
func providerText(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (m *messagesStream) complete() bool { return false }

// reply returns the gathered reply as a Messages response.
func (m *messagesStream) reply() ([]byte, error) {
	content := make([]map[string]json.RawMessage, 0, len(m.blocks))
	for _, b := range m.blocks {
		f := b.fields
		set := func(key string, v any) error {
			raw, err := jsonobj.Marshal(v)
			f[key] = raw
			return err
		}
		var err error
		switch b.typ {
		case "text":
			var start string
			_ = json.Unmarshal(f["text"], &start)
			err = set("text", start+b.text.String())
			if err == nil && len(b.citations) > 0 {
				err = set("citations", b.citations)
			}
		case "thinking":
			var start string
			_ = json.Unmarshal(f["thinking"], &start)
			err = set("thinking", start+b.thinking.String())
			if err == nil && b.signature != "" {
				err = set("signature", b.signature)
			}
		}
		if err != nil {
			return nil, err
		}
		if b.input.Len() > 0 {
			input := json.RawMessage(b.input.String())
			if !json.Valid(input) {
				// Calls reads this as arguments that are not JSON, which
				// the call's result then tells the model.
				input, _ = jsonobj.Marshal(b.input.String())
			}
			f["input"] = input
		}
		content = append(content, f)
	}
	stop := m.stopReason
	if len(stop) == 0 {
		stop = json.RawMessage("null")
	}
	return jsonobj.Marshal(struct {
		Type       string                       `json:"type"`
		Role       string                       `json:"role"`
		Content    []map[string]json.RawMessage `json:"content"`
		StopReason json.RawMessage              `json:"stop_reason"`
	}{"message", "assistant", content, stop})
}
