package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/boundedfile"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/plugins"
	"github.com/miniopenclaw/tool/policy"
)

// policyFlags are the permission flags of the commands that call tools.
type policyFlags struct {
	file    string
	as      string
	rolesIn string
	audit   string
	// auditHead is --audit-head: where the audit log publishes its head.
	auditHead string
	approve   bool
	// trustHints is --trust-hints: the policies read imported tools'
	// annotations as their servers state them.
	trustHints bool
	// byClient is serve's --approve-by-client: ask the MCP client's user.
	byClient bool
	// forward is set when calls may leave the process (--nats): then --as
	// is meaningful without --policy, as the principal the calls carry.
	forward bool
	// follow follows the --config file's "permissions" across its
	// reloads (set with --config and without --policy).
	follow   *plugins.Permissions
	reloadMu sync.Mutex // serializes reloads, which may change file

	loaded *policy.Authorizer // what options made, for listFilter
	// approvalsNATS is the NATS URL whose bucket keeps the approval
	// requests (--nats, or a worker's bus); "" keeps them in the file
	// store. approvals is the store, once made.
	approvalsNATS string
	approvals     policy.ApprovalStore
	// approvalKey and approvalAccept are --principal-key and
	// --accept-principal-key when approvals are on NATS: answers are
	// sealed with the key and used only when sealed with one of them
	// (policy.WithApprovalKey), since any account that may write the
	// bucket could otherwise approve anything waiting there.
	approvalKey    string
	approvalAccept []string
	// ws is the command's --workspace, whose file tools resolve their
	// path arguments before the policies see them.
	ws *workspaceFlags
}

func addPolicyFlags(fs *flag.FlagSet) *policyFlags {
	pf := &policyFlags{}
	fs.StringVar(&pf.file, "policy", "", "decide every call by the Cedar policies in `FILE` (default: every call is allowed)")
	fs.StringVar(&pf.as, "as", "", "with --policy, make calls as `USER[:ROLE,...]` (default: the anonymous principal)")
	fs.StringVar(&pf.rolesIn, "roles-in", "", "with --policy, role inheritance as `ROLE:PARENT,...` (admin:editor,editor:viewer)")
	fs.StringVar(&pf.audit, "audit", "", "with --policy, append every decision to the hash-chained audit log `FILE`")
	fs.StringVar(&pf.auditHead, "audit-head", "", "with --audit, write the log's head to `FILE` after each record, atomically, and refuse to continue a log that lacks the head FILE holds; clawtool audit verify --head-file FILE detects records cut from the log's end")
	fs.BoolVar(&pf.approve, "approve", false, "with --policy, ask on the terminal whether to run a call that needs an approval")
	fs.BoolVar(&pf.trustHints, "trust-hints", false, "with --policy, let the policies read the annotations (readOnly, destructive, idempotent, openWorld) of tools imported from MCP servers and plugins as their servers state them; without it they count as the worst case (not read-only, destructive)")
	return pf
}

// principal parses --as.
func (pf *policyFlags) principal() (policy.Principal, bool, error) {
	if pf.as == "" {
		return policy.Principal{}, false, nil
	}
	id, roles, _ := strings.Cut(pf.as, ":")
	if id == "" {
		return policy.Principal{}, false, fmt.Errorf("--as %q: the user is empty", pf.as)
	}
	p := policy.Principal{ID: id}
	if roles != "" {
		p.Roles = strings.Split(roles, ",")
	}
	return p, true, nil
}

// authorizer loads --policy; nil when it is not given. Its approval
// requests are kept in the file store of the user's state directory, so
// that clawtool approvals, in another process, answers them.
func (pf *policyFlags) authorizer() (*policy.Authorizer, error) {
	return pf.authorizerWith()
}

// authorizerWith is authorizer with more options, applied last.
func (pf *policyFlags) authorizerWith(extra ...policy.Option) (*policy.Authorizer, error) {
	if pf.file == "" {
		if pf.as != "" && pf.forward {
			_, _, err := pf.principal()
			return nil, err
		}
		if pf.as != "" || pf.audit != "" || pf.rolesIn != "" || pf.approve || pf.byClient || pf.trustHints {
			return nil, errors.New("--as, --roles-in, --audit, --approve and --trust-hints need --policy (--as alone also works with --nats)")
		}
	}
	if pf.auditHead != "" && pf.audit == "" {
		return nil, errors.New("--audit-head needs --audit")
	}
	if pf.file == "" {
		return nil, nil
	}
	p, hasP, err := pf.principal()
	if err != nil {
		return nil, err
	}
	parents := map[string][]string{}
	if pf.rolesIn != "" {
		for _, pair := range strings.Split(pf.rolesIn, ",") {
			child, parent, ok := strings.Cut(pair, ":")
			if !ok || child == "" || parent == "" {
				return nil, fmt.Errorf("--roles-in: %q is not ROLE:PARENT", pair)
			}
			parents[child] = append(parents[child], parent)
		}
	}
	opts := []policy.Option{policy.WithRoleParents(parents), policy.WithApprovalStore(pf.approvalStore()),
		policy.WithApprovalHint(func(req policy.ApprovalRequest) string {
			return fmt.Sprintf("A person the policies let approve it answers with: %s (or in the Approvals tab of clawtool inspect --policy %s --as USER)", pf.approveCommand(req.ID), pf.file)
		})}
	if pf.trustHints {
		opts = append(opts, policy.WithTrustedHints())
	}
	if pf.approvalsNATS != "" && pf.approvalKey != "" {
		key, err := policy.ReadSignerKeyFile(pf.approvalKey)
		if err != nil {
			return nil, fmt.Errorf("--principal-key: %w", err)
		}
		var accept [][]byte
		for _, name := range pf.approvalAccept {
			k, err := policy.ReadSignerKeyFile(name)
			if err != nil {
				return nil, fmt.Errorf("--accept-principal-key: %w", err)
			}
			accept = append(accept, k)
		}
		opts = append(opts, policy.WithApprovalKey(key, accept...))
	}
	if hasP {
		// Over stdio the principal comes from the command line.
		opts = append(opts, policy.WithDefaultPrincipal(p))
	}
	switch {
	case pf.byClient:
		var fallback policy.Approver
		if pf.approve {
			fallback = terminalApprover{}
		}
		opts = append(opts, policy.WithApprover(mcptool.ElicitApprover{Fallback: fallback}))
	case pf.approve:
		opts = append(opts, policy.WithApprover(terminalApprover{}))
	}
	if pf.ws != nil && pf.ws.dir != "" {
		// The workspace tools resolve their paths themselves, before the
		// call is decided: the policies see where links lead. Other
		// tools' path arguments are cleaned lexically.
		opts = append(opts, policy.WithPathArguments("path"))
	}
	if pf.audit != "" {
		var aopts []policy.AuditOption
		if pf.auditHead != "" {
			aopts = append(aopts, policy.WithHeadFile(pf.auditHead))
		}
		l, err := policy.OpenAuditFile(pf.audit, aopts...)
		if err != nil {
			return nil, err
		}
		opts = append(opts, policy.WithAudit(l))
	}
	return policy.Load(pf.file, append(opts, extra...)...)
}

// approvalStore returns the store of the command's approval requests:
// the NATS bucket with --nats (or a worker's bus), else the file store
// of the user's state directory.
func (pf *policyFlags) approvalStore() policy.ApprovalStore {
	if pf.approvals == nil {
		pf.approvals = approvalStore()
		if pf.approvalsNATS != "" {
			pf.approvals = &natsApprovals{url: pf.approvalsNATS}
		}
	}
	return pf.approvals
}

// closeApprovals closes the NATS store's connection, if one was made.
func (pf *policyFlags) closeApprovals() {
	if n, ok := pf.approvals.(*natsApprovals); ok {
		n.close()
	}
}

// options returns the registry options --policy asks for.
func (pf *policyFlags) options() ([]tool.RegistryOption, error) {
	a, err := pf.authorizer()
	if err != nil || a == nil {
		return nil, err
	}
	pf.loaded = a
	return []tool.RegistryOption{tool.WithAuthorizer(a)}, nil
}

// reloadOnHangup reloads --policy whenever the process gets SIGHUP, until
// ctx ends, reporting each reload on w; a file that does not parse leaves
// the policies in force. It does nothing without --policy.
func (pf *policyFlags) reloadOnHangup(ctx context.Context, w io.Writer) {
	if pf.loaded == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				pf.reload(w)
			}
		}
	}()
}

// reload reloads --policy and says how it went.
func (pf *policyFlags) reload(w io.Writer) {
	pf.reloadMu.Lock()
	defer pf.reloadMu.Unlock()
	if err := pf.loaded.ReloadFile(pf.file); err != nil {
		fmt.Fprintf(w, "clawtool: policy reload failed, the previous policies stay in force: %v\n", err)
		return
	}
	fmt.Fprintf(w, "clawtool: policies reloaded from %s\n", pf.file)
}

// listFilter returns what an MCP server lists under --policy: the tools
// of r the caller may call; nil without --policy.
func (pf *policyFlags) listFilter(r *tool.Registry) func(ctx context.Context, name string) bool {
	a := pf.loaded
	if a == nil {
		return nil
	}
	return func(ctx context.Context, name string) bool {
		t, ok := r.Get(name)
		return ok && a.CanList(ctx, name, tool.OptionsOf(t))
	}
}

// openListable is open followed by the tools of r the flags' principal
// may list: all of them without --policy, else those its policies let it
// call for some arguments (what serve lists to it).
func (rf *registryFlags) openListable(ctx context.Context, e *env, c string) (r *tool.Registry, tools []tool.Tool, cleanup func(), ok bool) {
	if r, cleanup, ok = rf.open(ctx, e, c); !ok {
		return nil, nil, nil, false
	}
	if a := rf.policy.loaded; a != nil {
		return r, a.View(ctx, r).List(), cleanup, true
	}
	return r, r.List(), cleanup, true
}

// registryOf returns a new registry holding tools, which have distinct
// names.
func registryOf(tools []tool.Tool) *tool.Registry {
	r := tool.NewRegistry()
	for _, t := range tools {
		r.Register(t)
	}
	return r
}

// openTerminal opens the terminal approvals are asked on; a variable for
// the tests.
var openTerminal = func() (io.ReadWriteCloser, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }

// terminalApprover asks the person at the terminal about each call that
// needs an approval. Standard input and output may carry the program's
// data, so it uses the terminal itself.
type terminalApprover struct{}

func (terminalApprover) Approve(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
	tty, err := openTerminal()
	if err != nil {
		// No one to ask here: the call waits for an answer from
		// clawtool approvals, which its refusal names.
		return false, fmt.Errorf("%w: no terminal to ask on (%v)", policy.ErrApprovalUnavailable, err)
	}
	defer tty.Close()
	// The arguments whole, or no question: the start of longer ones would
	// have the person approve what follows unread (canonical arguments
	// sort their keys, so a long "content" hides the "path" after it).
	args := strconv.QuoteToGraphic(string(req.Args))
	args = args[1 : len(args)-1]
	if len(args) > mcptool.MaxApprovalArgsShown {
		fmt.Fprintf(tty, "clawtool: %s asks to call %s with arguments of %d bytes, too long to show whole here; see them with `clawtool approvals show --args %s`, then answer with clawtool approvals approve or deny\n",
			shownWho(req.Principal), shownName(req.Tool), len(req.Args), req.ID)
		return false, fmt.Errorf("%w: arguments too long to show whole on the terminal (%d bytes escaped, at most %d)", policy.ErrApprovalUnavailable, len(args), mcptool.MaxApprovalArgsShown)
	}
	fmt.Fprintf(tty, "clawtool: %s asks to call %s with %s\nclawtool: allow this call once? [y/N] ",
		shownWho(req.Principal), shownName(req.Tool), args)
	line, err := bufio.NewReader(io.LimitReader(tty, 1024)).ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("reading the answer: %w", err)
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

func orAnonymous(id string) string {
	if id == "" {
		return "the anonymous caller"
	}
	return id
}

// visibleText escapes control characters and cuts s to n bytes, so that
// a model's arguments cannot rewrite the prompt on the terminal.
func visibleText(s string, n int) string {
	q := strconv.QuoteToGraphic(s)
	q = q[1 : len(q)-1]
	if len(q) > n {
		q = q[:n] + "…"
	}
	return q
}

// runPolicy is "clawtool policy check|explain".
func runPolicy(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "explain") {
		const usage = "Usage:\n  clawtool policy check [flags] POLICY\n  clawtool policy explain --policy FILE --as USER[:ROLE,...] [flags] TOOL [JSON]"
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(e.stdout, usage) // asked for: stdout, as every -h
			return exitOK
		}
		fmt.Fprintln(e.stderr, usage)
		return exitUsage
	}
	if args[0] == "check" {
		return runPolicyCheck(ctx, e, args[1:])
	}
	return runPolicyExplain(ctx, e, args[1:])
}

func runPolicyCheck(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "policy check", "[flags] POLICY",
		"Parses the Cedar policies in POLICY and validates them against a Cedar schema made from\n"+
			"the tools' definitions: conditions on arguments a tool lacks or compares as the wrong type,\n"+
			"unguarded optional arguments and unknown tools are reported, one per line, as errors (exit 1).\n"+
			"Conditions on a JSON number argument (a fraction refuses the call) or an untyped one are\n"+
			"warnings: they refuse some calls the tool accepts, and never let one through.")
	attrs := fs.String("principal-attrs", "", "the principal's attributes as a Cedar record body, such as `tenant?: String`")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one POLICY file")
	}
	src, err := readSmallFile(fs.Arg(0), policy.MaxPolicyBytes)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool policy check: %v\n", err)
		return exitUsage
	}
	r, cleanup, ok := rf.open(ctx, e, "policy check")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	problems, err := policy.Check(fs.Arg(0), src, r.List(), *attrs)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool policy check: %v\n", err)
		return exitToolError
	}
	errs, warnings := 0, 0
	for _, p := range problems {
		fmt.Fprintf(e.stdout, "%s: %s\n", fs.Arg(0), p)
		if p.Warning {
			warnings++
		} else {
			errs++
		}
	}
	if errs > 0 {
		return exitToolError
	}
	switch warnings {
	case 0:
		fmt.Fprintf(e.stdout, "%s: ok (%d tools)\n", fs.Arg(0), r.Len())
	case 1:
		fmt.Fprintf(e.stdout, "%s: ok (%d tools, 1 warning)\n", fs.Arg(0), r.Len())
	default:
		fmt.Fprintf(e.stdout, "%s: ok (%d tools, %d warnings)\n", fs.Arg(0), r.Len(), warnings)
	}
	return exitOK
}

func runPolicyExplain(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "policy explain", "--policy FILE --as USER[:ROLE,...] [flags] TOOL [JSON]",
		"Prints the decision the policies make for a call, the policies that made it, and the\n"+
			"arguments they saw (after strict parsing, validation and defaults). The tool does not run.")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError(fs, "want TOOL and optional JSON arguments")
	}
	if rf.policy.file == "" {
		return usageError(fs, "--policy is required")
	}
	a, err := rf.policy.authorizer()
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool policy explain: %v\n", err)
		return exitUsage
	}
	file := rf.policy.file
	rf.policy.file = "" // the registry below runs no policy: Explain decides
	rf.policy.as, rf.policy.audit, rf.policy.rolesIn = "", "", ""
	r, cleanup, ok := rf.open(ctx, e, "policy explain")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	name := fs.Arg(0)
	t, found := r.Get(name)
	if !found {
		fmt.Fprintf(e.stderr, "clawtool policy explain: %s\n", r.Execute(ctx, name, nil).Error)
		return exitToolError
	}
	input := json.RawMessage(`{}`)
	if fs.NArg() == 2 {
		input = json.RawMessage(fs.Arg(1))
	}
	x, err := a.Explain(ctx, t, input)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool policy explain: %v\n", err)
		return exitToolError
	}
	d, checked := x.Decision, x.Args
	who := "anonymous"
	if p := d.Principal; p.ID != "" {
		who = p.ID
		if len(p.Roles) > 0 {
			who += " (roles " + strings.Join(p.Roles, ", ") + ")"
		}
	}
	fmt.Fprintf(e.stdout, "decision:  %s\n", d.Effect)
	fmt.Fprintf(e.stdout, "principal: %s\n", who)
	fmt.Fprintf(e.stdout, "tool:      %s\n", name)
	fmt.Fprintf(e.stdout, "arguments: %s\n", checked)
	if rf.policy.ws != nil && rf.policy.ws.dir != "" {
		// Paths resolved in the workspace: show what the policies saw.
		if seen, err := a.PolicyArgs(name, checked); err == nil {
			fmt.Fprintf(e.stdout, "seen as:   %s\n", seen)
		}
	}
	if len(d.Policies) == 0 {
		fmt.Fprintf(e.stdout, "policies:  none applied (denied by default)\n")
	} else {
		fmt.Fprintf(e.stdout, "policies:  %s (%s)\n", strings.Join(d.Policies, ", "), file)
	}
	if d.Effect != policy.Allow {
		fmt.Fprintf(e.stdout, "message:   %s\n", d.Reason)
	}
	for _, err := range d.Errors {
		fmt.Fprintf(e.stdout, "error:     %s\n", err)
	}
	return exitOK
}

// auditUsage is what "clawtool audit" prints without a subcommand.
const auditUsage = `Usage:
  clawtool audit verify [--head HASH | --head-file FILE] LOG
  clawtool audit story [--json] LOG ID

Subcommands:
  verify    check the hash chain of an audit log written with --audit, and
            with --head or --head-file that it still holds a head kept elsewhere
  story     print the records of one call, by its approval request's ID (the
            request, the answer with who, when and the note, the run) or by its
            call digest, from a log whose chain verifies

Run "clawtool audit verify -h" or "clawtool audit story -h" for their flags.`

// runAudit is "clawtool audit verify ...".
func runAudit(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 && args[0] == "verify" {
		return runAuditVerify(ctx, e, args[1:])
	}
	if len(args) > 0 && args[0] == "story" {
		return runAuditStory(ctx, e, args[1:])
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(e.stdout, auditUsage)
		return exitOK
	}
	if len(args) == 0 {
		fmt.Fprintf(e.stderr, "clawtool audit: no subcommand given\n\n%s\n", auditUsage)
	} else {
		fmt.Fprintf(e.stderr, "clawtool audit: unknown subcommand %q\n\n%s\n", args[0], auditUsage)
	}
	return exitUsage
}

func runAuditStory(_ context.Context, e *env, args []string) int {
	fs := newFlags(e, "audit story", "[--json] LOG ID",
		`Story prints the records of one call from an audit log written with --audit,
after checking the log's chain: by an approval request's ID, the decision that
asked, the decisions that used the answer (who answered, when, and the note),
and the outcome of the run it allowed; by a call digest (the call_digest of a
record), every decision and outcome of that call.
The exit status is 0 when the log verifies, 1 when it does not, 2 for usage errors.`)
	asJSON := fs.Bool("json", false, "print the records as a JSON array")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() != 2 {
		return usageError(fs, "want a LOG file and an ID, got %d arguments", fs.NArg())
	}
	name, id := fs.Arg(0), fs.Arg(1)
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool audit story: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	story, err := policy.AuditStory(f, id)
	if err != nil && !errors.Is(err, policy.ErrAuditBroken) && !errors.Is(err, policy.ErrAuditStoryLong) {
		return usageError(fs, "%v", err)
	}
	if *asJSON {
		if story == nil {
			story = []policy.AuditRecord{}
		}
		writeJSON(e.stdout, story)
	} else {
		for _, r := range story {
			fmt.Fprintln(e.stdout, storyLine(r))
		}
		if len(story) == 0 && err == nil {
			fmt.Fprintf(e.stdout, "%s: no record names %s\n", name, id)
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool audit story: %s: %v\n", name, err)
		return exitToolError
	}
	return exitOK
}

// storyLine is one record of a story as text.
func storyLine(r policy.AuditRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s: %s calls %s", r.Seq, r.Time.UTC().Format(time.RFC3339), r.Event, shownText(orAnonymous(r.Principal), 200), shownText(r.Tool, 200))
	if r.Event == "outcome" {
		fmt.Fprintf(&b, ": %s in %s", r.Outcome, time.Duration(r.DurationNanos).Round(time.Microsecond))
		return b.String()
	}
	fmt.Fprintf(&b, ": %s", r.Effect)
	if r.Approved {
		b.WriteString(" (approved)")
	}
	if r.Approval != "" {
		fmt.Fprintf(&b, ", approval %s", r.Approval)
	}
	if r.AnsweredBy != "" {
		fmt.Fprintf(&b, ", answered by %s at %s", shownText(r.AnsweredBy, 200), r.Answered.UTC().Format(time.RFC3339))
		if r.Note != "" {
			fmt.Fprintf(&b, ": %s", shownText(r.Note, 500))
		}
	}
	if r.Reason != "" && r.Effect != policy.Allow {
		fmt.Fprintf(&b, "; reason: %s", shownText(r.Reason, 500))
	}
	return b.String()
}

// readSmallFile reads path, refusing one longer than limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	b, err := boundedfile.Read(path, limit)
	if _, ok := errors.AsType[*boundedfile.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s: longer than %s", path, byteSize(limit))
	}
	return b, err
}

func runAuditVerify(_ context.Context, e *env, args []string) int {
	fs := newFlags(e, "audit verify", "[--head HASH | --head-file FILE] LOG",
		`Verify checks the hash chain of an audit log written with --audit: an edited,
removed or reordered record is reported with its line number, and it prints
the number of records and the log's head (the hash of its last record).

A chain cannot show records cut from its end. Keep the head elsewhere (the
--audit-head FILE of the command that writes the log publishes it after each
record) and give it with --head HASH or --head-file FILE: a log that no longer
holds that head is reported as cut. Records appended since are fine.
The exit status is 0 when the log verifies, 1 when it does not, 2 for usage errors.`)
	head := fs.String("head", "", "the log must hold the record whose hash is `HASH` (a head printed or published before)")
	headFile := fs.String("head-file", "", "the log must hold the head kept in `FILE` (written by --audit-head)")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "want one LOG file, got %d arguments", fs.NArg())
	}
	if *head != "" && *headFile != "" {
		return usageError(fs, "give --head or --head-file, not both")
	}
	var want *policy.AuditSummary
	var from string
	switch {
	case *head != "":
		h, err := policy.ParseAuditHead([]byte(*head))
		if err != nil {
			return usageError(fs, "--head: %v", err)
		}
		want, from = &h, "--head"
	case *headFile != "":
		h, err := policy.ReadAuditHeadFile(*headFile)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool audit verify: --head-file %s: %v\n", *headFile, err)
			return exitUsage
		}
		want, from = &h, *headFile
	}
	name := fs.Arg(0)
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool audit verify: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	var sum policy.AuditSummary
	if want != nil {
		sum, err = policy.VerifyAuditHead(f, *want)
	} else {
		sum, err = policy.VerifyAudit(f)
	}
	if err != nil {
		fmt.Fprintf(e.stdout, "%s: BROKEN after %d good records: %v\n", name, sum.Records, err)
		return exitToolError
	}
	fmt.Fprintf(e.stdout, "%s: ok, %d records, head %s\n", name, sum.Records, sum.Head)
	if want != nil {
		fmt.Fprintf(e.stdout, "%s: holds the head of %s, %s\n", name, from, want.Head)
	}
	return exitOK
}
