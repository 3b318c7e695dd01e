package mcptool_test

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeServer is a hand-written MCP server on in-memory pipes, for attacks
// go-sdk's own server would not make. It answers initialize and
// tools/list (one tool, counting the listings), refuses other requests,
// and after notifications/initialized runs flood, with send to write a
// message.
type pipeServer struct {
	listings atomic.Int64
	mu       sync.Mutex
	w        io.WriteCloser
}

func (s *pipeServer) send(msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := io.WriteString(s.w, msg+"\n")
	return err
}

// startPipeServer returns the client's transport to a pipeServer.
func startPipeServer(t *testing.T, flood func(s *pipeServer)) (*pipeServer, mcp.Transport) {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	s := &pipeServer{w: sw}
	go func() {
		defer sw.Close()
		in := bufio.NewScanner(sr)
		in.Buffer(nil, 1<<20)
		for in.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(in.Bytes(), &m) != nil {
				continue
			}
			var err error
			switch {
			case m.Method == "initialize":
				err = s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"hostile","version":"0"}}}`)
			case m.Method == "notifications/initialized":
				go flood(s)
			case m.Method == "tools/list":
				s.listings.Add(1)
				err = s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`)
			case len(m.ID) > 0:
				err = s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"no"}}`)
			}
			if err != nil {
				return
			}
		}
		sr.Close()
	}()
	return s, &mcp.IOTransport{Reader: cr, Writer: cw}
}

// TestHostileListChangedStorm: a server sends
// notifications/tools/list_changed every 5 ms for 10 s. Each one made the
// client list every tool again (up to the page and tool caps), back to
// back for as long as the storm lasts. The client now re-imports at most
// once a second, the notifications in between folded into the next one.
func TestHostileListChangedStorm(t *testing.T) {
	const storm, every = 10 * time.Second, 5 * time.Millisecond
	run := func(t *testing.T, opts ...mcptool.ClientOption) int64 {
		var listings int64
		synctest.Test(t, func(t *testing.T) {
			s, tr := startPipeServer(t, func(s *pipeServer) {
				for range storm / every {
					if s.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`) != nil {
						return
					}
					time.Sleep(every)
				}
			})
			opts = append(opts, mcptool.WithProtocolVersion("2025-11-25"))
			c, err := mcptool.Connect(t.Context(), tr, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Import(t.Context(), tool.NewRegistry()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(storm + 2*time.Second)
			synctest.Wait()
			listings = s.listings.Load()
		})
		return listings
	}
	// Control: with no gap between re-imports, the storm is a listing
	// per notification.
	n := run(t, mcptool.WithReimportGap(0))
	t.Logf("control: %d listings", n)
	if n < int64(storm/every)/2 {
		t.Fatalf("control: %d listings during the storm, want one per notification (about %d)", n, storm/every)
	}
	n = run(t)
	t.Logf("defended: %d listings", n)
	if most := int64(storm/time.Second) + 2; n > most {
		t.Errorf("%d listings during a %v storm, want at most %d (the first, one a second, the last)", n, storm, most)
	}
}
