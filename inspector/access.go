package inspector

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// WithCallAs lets the page make a call as a chosen principal: POST
// /api/call then accepts "as": {"id": USER, "roles": [ROLE, ...]}, and
// runs the call with the context as returns, so that the host's
// authorizer decides it for that principal. The call's result shows the
// decision: a result of kind "denied" with its message, and an ask with
// the approval request in its metadata. An error from as refuses the
// call with 400 and the error's message.
//
// The page is for whoever holds its token: with WithCallAs, that person
// may act as anyone.
func WithCallAs(as func(ctx context.Context, id string, roles []string) (context.Context, error)) Option {
	return func(h *Handler) { h.callAs = as }
}

// WithAuditLog lets the page show an audit log of JSON lines, one record
// each (the records of the policy package): GET /api/audit reads what
// open returns and answers the records that match its query parameters
// principal, tool and effect (exact matches; empty matches all), the
// last ones first, at most limit (default and at most [MaxAuditRows]).
// At most [MaxAuditBytes] of the log are read, from its end.
func WithAuditLog(open func() (io.ReadSeekCloser, error)) Option {
	return func(h *Handler) { h.openAudit = open }
}

// MaxAuditRows bounds the records GET /api/audit answers.
const MaxAuditRows = 1000

// MaxAuditBytes bounds how much of the audit log GET /api/audit reads,
// from its end.
const MaxAuditBytes = 8 << 20

// maxPrincipalField bounds the principal id and each role of "as".
const maxPrincipalField = 256

// callAs is the "as" of a call request.
type callAs struct {
	ID    string   `json:"id"`
	Roles []string `json:"roles,omitempty"`
}

// check says what is wrong with a, or "".
func (a *callAs) check() string {
	switch {
	case a.ID == "":
		return `"as" needs "id": the user to call as`
	case len(a.ID) > maxPrincipalField:
		return fmt.Sprintf(`"as": the id is longer than %d bytes`, maxPrincipalField)
	case len(a.Roles) > 64:
		return `"as": more than 64 roles`
	}
	for _, r := range a.Roles {
		if r == "" || len(r) > maxPrincipalField {
			return fmt.Sprintf(`"as": a role is empty or longer than %d bytes`, maxPrincipalField)
		}
	}
	return ""
}

// access answers GET /api/access: what the page may offer.
func (h *Handler) access(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"call_as": h.callAs != nil, "audit": h.openAudit != nil, "sources": h.sources != nil, "approvals": h.approvals != nil})
}

// audit answers GET /api/audit.
func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	if h.openAudit == nil {
		writeError(w, http.StatusNotFound, "no audit log: start with --policy and --audit FILE")
		return
	}
	q := r.URL.Query()
	limit := MaxAuditRows
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxAuditRows {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want a number from 1 to %d", s, MaxAuditRows))
			return
		}
		limit = n
	}
	want := map[string]string{}
	for _, k := range []string{"principal", "tool", "effect"} {
		if v := q.Get(k); v != "" {
			want[k] = v
		}
	}
	f, err := h.openAudit()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "opening the audit log: "+err.Error())
		return
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(max(0, end-MaxAuditBytes), io.SeekStart)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the audit log: "+err.Error())
		return
	}
	sc := bufio.NewScanner(io.LimitReader(f, MaxAuditBytes))
	sc.Buffer(nil, 1<<20)
	first := end > MaxAuditBytes // the first line read may be cut
	var rows []map[string]any
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // not a record: leave it to clawtool audit verify
		}
		if matches(rec, want) {
			rows = append(rows, rec)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusInternalServerError, "reading the audit log: "+err.Error())
		return
	}
	out := make([]map[string]any, 0, min(limit, len(rows)))
	for i := len(rows) - 1; i >= 0 && len(out) < limit; i-- {
		// Every text is shown with the characters that hide or
		// reorder text escaped, as the approvals are: a principal
		// named "mallory\u202Enimda" must not read as another.
		out = append(out, visibleValue(rows[i]).(map[string]any))
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": out, "matched": len(rows)})
}

func matches(rec map[string]any, want map[string]string) bool {
	for k, v := range want {
		s, _ := rec[k].(string)
		if !strings.EqualFold(s, v) {
			return false
		}
	}
	return true
}

// visibleValue returns v, a decoded JSON value, with its strings (keys
// included) passed through jsontext.Visible.
func visibleValue(v any) any {
	switch v := v.(type) {
	case string:
		return jsontext.Visible(v)
	case []any:
		for i, e := range v {
			v[i] = visibleValue(e)
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[jsontext.Visible(k)] = visibleValue(e)
		}
		return out
	}
	return v
}
