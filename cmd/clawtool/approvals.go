package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/policy"
)

// approvalsNow is the clock of the approvals command; the tests fix it.
var approvalsNow = time.Now

// brokenApprovals is the store of a process that has no state directory:
// every use fails, so a call that needs an approval is refused, saying
// why (fail closed).
type brokenApprovals struct{ err error }

func (b brokenApprovals) Put(context.Context, policy.ApprovalRecord, time.Time) (policy.ApprovalRecord, error) {
	return policy.ApprovalRecord{}, b.err
}
func (b brokenApprovals) Get(context.Context, string, time.Time) (policy.ApprovalRecord, error) {
	return policy.ApprovalRecord{}, b.err
}
func (b brokenApprovals) Pending(context.Context, time.Time) ([]policy.ApprovalRecord, error) {
	return nil, b.err
}
func (b brokenApprovals) Answer(context.Context, string, policy.ApprovalAnswer, time.Time) (policy.ApprovalRecord, error) {
	return policy.ApprovalRecord{}, b.err
}
func (b brokenApprovals) Consume(context.Context, string, time.Time) (policy.ApprovalRecord, bool, error) {
	return policy.ApprovalRecord{}, false, b.err
}

// approvalStore returns the store every command under --policy keeps its
// approval requests in: the file store in the user's state directory.
func approvalStore() policy.ApprovalStore {
	dir, err := policy.DefaultApprovalDir()
	if err != nil {
		return brokenApprovals{err}
	}
	return &policy.FileApprovalStore{Dir: dir}
}

const approvalsUsage = `Usage:
  clawtool approvals list [--nats URL] [--json]
  clawtool approvals show [--nats URL] [--json] ID
  clawtool approvals approve --policy FILE --as USER[:ROLE,...] [--nats URL] [--note TEXT] [--json] ID
  clawtool approvals deny --policy FILE --as USER[:ROLE,...] [--nats URL] [--note TEXT] [--json] ID

Approvals lists the calls waiting for a person's approval (made by clawtool call,
chat, serve or worker under --policy), shows one, and approves or denies it. The
requests of this machine are kept in the user's state directory
($XDG_STATE_HOME/clawtool/approvals, or ~/.local/state/clawtool/approvals); with
--nats URL, those of every worker and command given that NATS server, in its
JetStream bucket clawtool_approvals. Who may
answer is decided by the policies in --policy for the --as principal: a permit for
the action Action::"approve" on the call's tool, or Action::"approveOwn" for one's
own call. An approved call runs once, when it is made again unchanged before the
approval expires; a denied one is told who denied it and the note.`

// runApprovals is "clawtool approvals list|show|approve|deny".
func runApprovals(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, approvalsUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(e.stdout, approvalsUsage)
		return exitOK
	case "list", "show", "approve", "deny":
		return runApprovalsSub(ctx, e, args[0], args[1:])
	}
	fmt.Fprintf(e.stderr, "clawtool approvals: unknown subcommand %q\n\n%s\n", args[0], approvalsUsage)
	return exitUsage
}

func runApprovalsSub(ctx context.Context, e *env, sub string, args []string) int {
	synopsis := map[string]string{
		"list":    "[--nats URL] [--json] [--args]",
		"show":    "[--nats URL] [--json] [--args] ID",
		"approve": "--policy FILE --as USER[:ROLE,...] [--nats URL] [--note TEXT] [--json] ID",
		"deny":    "--policy FILE --as USER[:ROLE,...] [--nats URL] [--note TEXT] [--json] ID",
	}[sub]
	about := map[string]string{
		"list":    "List prints the pending approval requests, oldest first: id, who asked, the tool,\nwhen the request expires and why it was asked, then a preview of the arguments\n(with --args, the whole arguments);\nthen the interrupted ones: approved, used by a process that died before the call\nwas recorded as run (it may or may not have run), which a person may answer again.",
		"show":    "Show prints one approval request, pending or answered; with --args, its whole\narguments rather than the preview, which cuts long values.",
		"approve": "Approve approves the pending or interrupted request ID as the --as principal, when\nthe policies let it: the call then runs once, when it is made again unchanged.",
		"deny":    "Deny denies the pending request ID as the --as principal, when the policies let\nit: the call is then told who denied it, and the note.",
	}[sub]
	fs := newFlags(e, "approvals "+sub, synopsis, about)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	var pf policyFlags
	fs.StringVar(&pf.approvalsNATS, "nats", "", "use the approval requests kept on the NATS server at `URL` (its JetStream bucket), not this machine's")
	answering := sub == "approve" || sub == "deny"
	whole := new(bool)
	if !answering {
		whole = fs.Bool("args", false, "print the whole arguments of each request (control characters escaped), not the preview, which cuts long values")
		fs.StringVar(&pf.approvalKey, "principal-key", "", "with --nats, check each request's seal with the shared key in `FILE` the workers were given, and say of one that does not verify that what it shows may not be what was asked")
	}
	var note *string
	if answering {
		fs.StringVar(&pf.file, "policy", "", "the Cedar policies in `FILE` that say who may answer")
		fs.StringVar(&pf.as, "as", "", "answer as `USER[:ROLE,...]`")
		fs.StringVar(&pf.rolesIn, "roles-in", "", "role inheritance as `ROLE:PARENT,...` (admin:editor,editor:viewer)")
		note = fs.String("note", "", "a note for the caller, such as why a call is denied (`TEXT`)")
		fs.StringVar(&pf.approvalKey, "principal-key", "", "with --nats, seal the answer with the shared key in `FILE` that the workers and serve --nats were given: with --principal-key they use only answers sealed with it")
	}
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if pf.approvalKey != "" && pf.approvalsNATS == "" {
		return usageError(fs, "--principal-key needs --nats: it seals answers kept in the NATS bucket")
	}
	// sealed says of a request whose seal does not verify under
	// --principal-key that it may show another call than the one asked.
	sealed := func(policy.ApprovalRecord) string { return "" }
	if pf.approvalKey != "" && !answering {
		key, err := policy.ReadSignerKeyFile(pf.approvalKey)
		if err != nil {
			return usageError(fs, "--principal-key: %v", err)
		}
		sealed = func(r policy.ApprovalRecord) string {
			if err := policy.VerifyApprovalRequest(r, key); err != nil {
				return "NOT VERIFIED, what it shows may not be the call asked: " + shownText(err.Error(), 300)
			}
			return "verified"
		}
	}
	store := pf.approvalStore()
	defer pf.closeApprovals()
	now := approvalsNow()
	if sub == "list" {
		if fs.NArg() > 0 {
			return usageError(fs, "unexpected argument %q", fs.Arg(0))
		}
		recs, err := store.Pending(ctx, now)
		if err == nil {
			var broken []policy.ApprovalRecord
			broken, err = interrupted(ctx, store, now)
			recs = append(recs, broken...)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool approvals list: %v\n", err)
			return exitToolError
		}
		if *asJSON {
			out := make([]shownApproval, 0, len(recs))
			for _, r := range recs {
				out = append(out, shown(r, *whole))
			}
			writeJSON(e.stdout, out)
			return exitOK
		}
		if len(recs) == 0 {
			fmt.Fprintln(e.stdout, "no approval requests are waiting")
			return exitOK
		}
		for _, r := range recs {
			if r.State == policy.ApprovalPending {
				fmt.Fprintf(e.stdout, "%s  %s calls %s, expires %s\n", r.ID, shownWho(r.Principal), shownName(r.Tool), r.Expires.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(e.stdout, "%s  %s calls %s, INTERRUPTED: %s by %s, used at %s by process %d, which died; the call may or may not have run (approve or deny it again)\n",
					r.ID, shownWho(r.Principal), shownName(r.Tool), r.State, shownName(r.AnsweredBy), r.Used.UTC().Format(time.RFC3339), r.Claim.PID)
			}
			fmt.Fprintf(e.stdout, "    arguments: %s\n    reason:    %s\n", shownArgs(r, *whole), shownText(r.Reason, 500))
			if s := sealed(r); s != "" {
				fmt.Fprintf(e.stdout, "    seal:      %s\n", s)
			}
		}
		return exitOK
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one approval ID")
	}
	id := fs.Arg(0)
	if sub == "show" {
		r, err := store.Get(ctx, id, now)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool approvals show: %v\n", err)
			return exitToolError
		}
		if *asJSON {
			writeJSON(e.stdout, shown(r, *whole))
			return exitOK
		}
		printApproval(e.stdout, r, *whole)
		if s := sealed(r); s != "" {
			fmt.Fprintf(e.stdout, "%-10s %s\n", "seal:", s)
		}
		return exitOK
	}
	if pf.file == "" || pf.as == "" {
		return usageError(fs, "--policy and --as are required: they say who answers, and whether they may")
	}
	if _, _, err := pf.principal(); err != nil {
		return usageError(fs, "%v", err)
	}
	// The authorizer answers for --as (policy.WithDefaultPrincipal).
	a, err := pf.authorizerWith(policy.WithApprovalStore(store), policy.WithClock(approvalsNow))
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool approvals %s: %v\n", sub, err)
		return exitUsage
	}
	r, err := a.Answer(ctx, id, sub == "approve", *note)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool approvals %s: %v\n", sub, err)
		if errors.Is(err, policy.ErrApprovalAnswered) {
			fmt.Fprintf(e.stderr, "clawtool approvals %s: run clawtool approvals show %s to see the answer\n", sub, r.ID)
		}
		return exitToolError
	}
	if *asJSON {
		writeJSON(e.stdout, r)
		return exitOK
	}
	if r.State == policy.ApprovalApproved {
		fmt.Fprintf(e.stdout, "approved %s: %s's call to %s runs once when it is made again unchanged, before %s\n",
			r.ID, shownWho(r.Principal), shownName(r.Tool), r.Expires.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(e.stdout, "denied %s: %s's call to %s is told it was denied by %s\n", r.ID, shownWho(r.Principal), shownName(r.Tool), shownName(r.AnsweredBy))
	}
	return exitOK
}

// shownWho is a principal's ID as a person reads it: the anonymous
// caller named, control and invisible characters escaped, at most 200
// bytes. The ID is a token's sub claim, or a field of a record another
// machine wrote to a shared store: neither may rewrite what the person
// who approves sees.
func shownWho(id string) string { return shownText(orAnonymous(id), 200) }

// shownName is a tool name, a host or who answered, as a person reads
// it (see shownWho).
func shownName(s string) string { return shownText(s, 200) }

// printApproval prints one record as aligned fields.
func printApproval(w io.Writer, r policy.ApprovalRecord, whole bool) {
	field := func(k, v string) { fmt.Fprintf(w, "%-10s %s\n", k+":", v) }
	field("id", r.ID)
	state := string(r.State)
	if r.State != policy.ApprovalPending {
		state += " by " + shownName(r.AnsweredBy) + " at " + r.Answered.UTC().Format(time.RFC3339)
		if !r.Used.IsZero() {
			state += ", used at " + r.Used.UTC().Format(time.RFC3339)
		}
		if c := r.Claim; c != nil {
			state += fmt.Sprintf(" by process %d on %s", c.PID, shownName(c.Host))
			switch {
			case !r.Done.IsZero():
				state += ", ran (recorded at " + r.Done.UTC().Format(time.RFC3339) + ")"
			case r.Interrupted():
				state += "; INTERRUPTED: the process died before recording that the call ran, so it may or may not have run; check, then approve or deny it again"
			default:
				state += ", running"
			}
		}
		if r.Interrupts > 0 {
			state += fmt.Sprintf(" (answered again after %d interrupted run(s))", r.Interrupts)
		}
	}
	field("state", state)
	if r.Note != "" {
		field("note", shownText(r.Note, policy.MaxApprovalNote))
	}
	field("principal", shownWho(r.Principal))
	field("tool", shownName(r.Tool))
	field("arguments", shownArgs(r, whole))
	// A shared store's record is anyone's who may write it: every field
	// is shown escaped, the digest and policy ids too.
	field("digest", shownText(r.Digest, 200))
	field("policies", shownText(strings.Join(r.Policies, ", "), 2000))
	field("reason", shownText(r.Reason, 500))
	field("created", r.Created.UTC().Format(time.RFC3339))
	field("expires", r.Expires.UTC().Format(time.RFC3339))
}

// approveCommand is the command that approves request id under the
// policies of pf, for the person who answers to fill in.
func (pf *policyFlags) approveCommand(id string) string {
	cmd := fmt.Sprintf("clawtool approvals approve %s --policy %s --as USER[:ROLE,...]", id, pf.file)
	if pf.approvalsNATS != "" {
		cmd += " --nats " + withoutCredentials(pf.approvalsNATS)
		if pf.approvalKey != "" {
			cmd += " --principal-key FILE" // the key's path is not the model's to read
		}
	}
	return cmd
}

// withoutCredentials is the NATS URLs urls (comma-separated) without
// their user and password: what a refusal may show the model.
func withoutCredentials(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		} else if err != nil {
			parts[i] = "URL"
		}
	}
	return strings.Join(parts, ",")
}

// shownText is s with every character that is not graphic escaped, cut
// to n bytes: what the person deciding reads cannot rewrite the
// terminal, and quotes stay as they are.
func shownText(s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsGraphic(r) && r != '\\' {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	out := b.String()
	if len(out) > n {
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out = out[:n] + "…"
	}
	return out
}

// shownApproval is a record as --json prints it: with whether its use
// was interrupted (see policy.ApprovalRecord.Interrupted), and, with
// --args, its whole arguments as JSON (the record's own base64 is never
// printed).
type shownApproval struct {
	policy.ApprovalRecord
	Args        json.RawMessage `json:"args,omitempty"`
	ArgsKept    *bool           `json:"args_kept,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
}

func shown(r policy.ApprovalRecord, whole bool) shownApproval {
	out := shownApproval{ApprovalRecord: r, Interrupted: r.Interrupted()}
	if whole {
		kept := r.Args != nil && json.Valid(r.Args)
		out.ArgsKept = &kept
		if kept {
			out.Args = json.RawMessage(r.Args)
		}
	}
	return out
}

// shownArgs is r's arguments as a person reads them: the preview, or with
// whole the whole arguments, control and invisible characters escaped;
// a record written before stores kept whole arguments says so and
// shows its preview.
func shownArgs(r policy.ApprovalRecord, whole bool) string {
	switch {
	case !whole:
		return shownText(r.Preview, 2*policy.MaxApprovalPreview)
	case r.Args == nil:
		return "(not kept: the request was made before approval stores kept whole arguments; the preview) " + shownText(r.Preview, 2*policy.MaxApprovalPreview)
	}
	return shownText(string(r.Args), 10*policy.MaxApprovalArgs)
}

// interrupted returns the records of store whose answer was used by a
// process that died before the call was recorded as run; none from a
// store that does not claim answers (NATS).
func interrupted(ctx context.Context, store policy.ApprovalStore, now time.Time) ([]policy.ApprovalRecord, error) {
	c, ok := store.(policy.ApprovalClaimer)
	if !ok {
		return nil, nil
	}
	recs, err := c.Claimed(ctx, now)
	if err != nil {
		return nil, err
	}
	var out []policy.ApprovalRecord
	for _, r := range recs {
		if r.Interrupted() {
			out = append(out, r)
		}
	}
	return out, nil
}
