package inspector

import (
	"errors"
	"net/http"
	"time"

	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/policy"
)

// Approvals is what the page's Approvals tab lists and answers: the
// approval requests of a policy.ApprovalStore, answered for one
// principal through [policy.Authorizer.Answer]. Make one with
// [NewApprovals].
type Approvals struct {
	store policy.ApprovalStore
	a     *policy.Authorizer
	as    policy.Principal
}

// NewApprovals returns the Approvals of store, answered by a for as: the
// page's approvals and denials are decided by the policies of a for that
// principal, as clawtool approvals decides them, whoever the page's
// "call as" names (the page's holder may call as anyone, but answers
// only as as). A zero as answers nothing: the anonymous principal never
// may.
func NewApprovals(store policy.ApprovalStore, a *policy.Authorizer, as policy.Principal) *Approvals {
	return &Approvals{store: store, a: a, as: as}
}

// WithApprovals adds the Approvals tab: GET /api/approvals answers the
// pending requests (who asked, the tool, a preview of the arguments, why
// and until when) and the principal the page answers as; GET
// /api/approvals/{id} answers one request, pending or answered, with its
// whole arguments in args (escaped as the preview is; args_kept false
// for a record made before stores kept them); POST
// /api/approvals/{id}/approve and /deny, with the body {"note": TEXT},
// answer one. A refusal comes back with its reason: 403 when the
// policies do not let the principal answer, 404 for an unknown or
// expired request, 409 for one already answered, 503 when the store
// fails. The page reloads the list every few seconds while it is open.
func WithApprovals(ap *Approvals) Option {
	return func(h *Handler) { h.approvals = ap }
}

// MaxPendingShown bounds the requests GET /api/approvals answers.
const MaxPendingShown = 500

// pendingView is one request as the page shows it.
type pendingView struct {
	ID        string   `json:"id"`
	Principal string   `json:"principal"`
	Tool      string   `json:"tool"`
	Preview   string   `json:"preview"`
	Reason    string   `json:"reason"`
	Policies  []string `json:"policies"`
	Created   string   `json:"created"`
	Expires   string   `json:"expires"`
	// Args (whole) and ArgsKept are set by GET /api/approvals/{id} only.
	Args     *string `json:"args,omitempty"`
	ArgsKept *bool   `json:"args_kept,omitempty"`
}

// view is r as the page shows it. The person who approves judges the
// preview, and the approval lets the exact arguments run: characters that
// hide or reorder text (U+202E, U+200B...) are escaped as \uXXXX, which
// is how JSON writes them too, so that what is shown is what runs.
func view(r policy.ApprovalRecord) pendingView {
	const layout = "2006-01-02T15:04:05Z07:00"
	return pendingView{ID: r.ID, Principal: jsontext.Visible(r.Principal), Tool: jsontext.Visible(r.Tool),
		Preview: jsontext.Visible(r.Preview), Reason: jsontext.Visible(r.Reason),
		Policies: r.Policies, Created: r.Created.UTC().Format(layout), Expires: r.Expires.UTC().Format(layout)}
}

// pending answers GET /api/approvals.
func (h *Handler) pending(w http.ResponseWriter, r *http.Request) {
	ap := h.approvals
	if ap == nil {
		writeError(w, http.StatusNotFound, "no approvals: start with --policy")
		return
	}
	recs, err := ap.store.Pending(r.Context(), time.Now())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "reading the approval requests: "+err.Error())
		return
	}
	out := make([]pendingView, 0, min(len(recs), MaxPendingShown))
	for _, rec := range recs[:min(len(recs), MaxPendingShown)] {
		out = append(out, view(rec))
	}
	writeJSON(w, http.StatusOK, map[string]any{"pending": out, "total": len(recs), "as": ap.as.ID})
}

// one answers GET /api/approvals/{id}: the request with its whole
// arguments.
func (h *Handler) one(w http.ResponseWriter, r *http.Request) {
	ap := h.approvals
	if ap == nil {
		writeError(w, http.StatusNotFound, "no approvals: start with --policy")
		return
	}
	rec, err := ap.store.Get(r.Context(), r.PathValue("id"), time.Now())
	switch {
	case errors.Is(err, policy.ErrUnknownApproval), errors.Is(err, policy.ErrExpiredApproval):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "reading the approval request: "+err.Error())
		return
	}
	v := view(rec)
	kept := rec.Args != nil
	v.ArgsKept = &kept
	if kept {
		args := jsontext.Visible(string(rec.Args))
		v.Args = &args
	}
	writeJSON(w, http.StatusOK, v)
}

// answer answers POST /api/approvals/{id}/{verb}.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request) {
	ap := h.approvals
	if ap == nil {
		writeError(w, http.StatusNotFound, "no approvals: start with --policy")
		return
	}
	verb := r.PathValue("verb")
	if verb != "approve" && verb != "deny" {
		writeError(w, http.StatusNotFound, "answer with approve or deny")
		return
	}
	var body struct {
		Note string `json:"note"`
	}
	if !decodeBody(w, r, 2*policy.MaxApprovalNote, &body) {
		return
	}
	ctx := r.Context()
	if ap.as.ID != "" {
		ctx = policy.WithPrincipal(r.Context(), ap.as)
	}
	rec, err := ap.a.Answer(ctx, r.PathValue("id"), verb == "approve", body.Note)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "state": rec.State, "answered_by": rec.AnsweredBy, "note": rec.Note, "expires": view(rec).Expires})
	case errors.Is(err, policy.ErrNotApprover):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, policy.ErrUnknownApproval), errors.Is(err, policy.ErrExpiredApproval):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, policy.ErrApprovalAnswered):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, policy.ErrApprovalTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, err.Error())
	default:
		writeError(w, http.StatusServiceUnavailable, "the approval store failed: "+err.Error())
	}
}
