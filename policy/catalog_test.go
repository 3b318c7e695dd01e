package policy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// Catalog P: attempts to get a call past the permissions layer, in the
// style of the sandbox's attack catalog (sandbox/catalog_linux_test.go).
// Each row is one attack: a call the model makes (after, for some rows, a
// few steps that set it up: an approval granted, a reload), under a set
// of policies meant to refuse it. For every row, runCatalogRow checks, each
// in a fixture of its own:
//
//   - the positive control: without the defence the attack works. Under
//     the row's control policies (catalogPermitAll unless the row names
//     others) the same call runs the tool: its counter moves. For a row
//     whose defence is not the policies (the registry's strict parser),
//     the control calls the tool directly.
//   - the plain form, when the row has one: the policies in force do
//     refuse what the attack aims at when it is sent plainly (amount 150
//     for a forbid on amount > 100), so the attack is aimed at a real
//     refusal.
//   - the attack: refused with the row's kind and message, and the
//     host-side check: the tool's own counter did not move, so nothing
//     ran. When the row names the deciding policy, the audit log's record
//     of the refusal lists it.
//
// Each row runs twice, with the Authorizer's cache (and so its residual
// fast path and its cached verdicts) and without (every call decided by
// Cedar), since a bypass may hide in either.
//
// Rows of another part of the layer go in files of their own with IDs of
// their own (catalog_paths_test.go: P-path-1, …) and run through
// runCatalogRow from a test of that file; the fixture's tools are in
// catalogTools, and a row may add tools of its own (tools).

// A catalogRow is one attack of catalog P. A field left zero takes the
// default its comment gives.
type catalogRow struct {
	// id names the row (P1, P2, …; P-path-1, … in catalog_paths_test.go),
	// and name says in a few words what the attack tries.
	id, name string
	// policies is the Cedar policy set in force for the attack and its
	// plain form.
	policies string
	// options returns more Authorizer options (path arguments, a root
	// in e.dir, an approver); nil adds none. The fixture always adds an
	// audit log and a clock (e.now).
	options func(e *catalogEnv) []policy.Option
	// tools returns more tools for the fixture's registry; nil adds none.
	tools func(e *catalogEnv) []tool.Tool
	// setup prepares a fresh fixture (files and links in e.dir) before
	// the control, the plain form and the attack; nil does nothing.
	setup func(t *testing.T, e *catalogEnv)
	// as is the principal the attack's call is made for; nil makes it
	// for the anonymous principal.
	as *policy.Principal
	// tool and args are the attack's call, as the model sends it.
	tool, args string
	// view makes the call through the principal's view of the registry
	// (Authorizer.View): a tool the principal may not list is not found.
	view bool
	// before, when set, runs in the attack's fixture before the attack's
	// call (and the counter is read after it): a call that caches a
	// verdict, an approval requested and granted, a reload.
	before func(t *testing.T, e *catalogEnv)
	// kind and want are the refusal the attack must get: the result's
	// kind, and substrings its message must all contain.
	kind tool.ErrorKind
	want []string
	// decided, when set, is a policy the audit record of the refusal
	// must list: the forbid that applied, or the policy that failed.
	decided string
	// failed says the refusal comes from a policy that could not be
	// evaluated: the result's Metadata["policy_errors"] must say which.
	failed bool
	// plain, when set, is the arguments of the attack's target sent
	// plainly, which the policies in force must refuse (kind denied).
	plain string
	// control is the policy set of the positive control; empty is
	// catalogPermitAll. The control makes the attack's call (without
	// before) in a fresh fixture, and some tool must run. controlCall,
	// when set, replaces that call; directControl calls the tool without
	// the registry (for a defence that is not the policies).
	control       string
	controlCall   func(t *testing.T, e *catalogEnv) tool.Result
	directControl bool
	// allowed rows are not refused: the attack is let through by design
	// (a full-width key is another key). The call must run, and seen
	// checks that the tool received what the policies saw.
	allowed bool
	seen    func(t *testing.T, got json.RawMessage)
}

// catalogPermitAll lets every call run: the control of most rows.
const catalogPermitAll = `@id("all") permit (principal, action, resource);`

// A catalogEnv is one fixture: an Authorizer of the row's policies, a
// registry of the catalog's tools decided by it, an audit log, and the
// tools' counters.
type catalogEnv struct {
	a     *policy.Authorizer
	reg   *tool.Registry
	dir   string // a directory for the row's files
	now   time.Time
	audit bytes.Buffer

	mu   sync.Mutex
	runs map[string]*atomic.Int64   // by tool: the calls that ran
	got  map[string]json.RawMessage // by tool: the arguments of its latest run
	ctxs map[string]context.Context // by principal: one context each, as a session keeps
	byID map[string]tool.Tool       // the registry's tools, for direct calls
}

// newCatalogEnv returns a fixture for row with the policies src. cached
// says whether the Authorizer keeps verdicts (and uses its fast path).
func newCatalogEnv(t *testing.T, row catalogRow, src string, cached bool) *catalogEnv {
	t.Helper()
	e := &catalogEnv{
		dir: t.TempDir(), now: time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC),
		runs: map[string]*atomic.Int64{}, got: map[string]json.RawMessage{}, ctxs: map[string]context.Context{},
		byID: map[string]tool.Tool{},
	}
	if row.setup != nil {
		row.setup(t, e)
	}
	opts := []policy.Option{policy.WithAudit(policy.NewAuditLog(&e.audit)), policy.WithClock(func() time.Time { return e.now })}
	if !cached {
		opts = append(opts, policy.WithCacheSize(0))
	}
	if row.options != nil {
		opts = append(opts, row.options(e)...)
	}
	a, err := policy.New(row.id+".cedar", []byte(src), opts...)
	if err != nil {
		t.Fatalf("policies: %v\n%s", err, src)
	}
	e.a = a
	e.reg = tool.NewRegistry(tool.WithAuthorizer(a))
	tools := catalogTools(e)
	if row.tools != nil {
		tools = append(tools, row.tools(e)...)
	}
	for _, tl := range tools {
		if err := e.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
		e.byID[tl.Name()] = tl
	}
	return e
}

// ran records a run of a tool with its arguments.
func (e *catalogEnv) ran(name string, args json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.runs[name]
	if c == nil {
		c = new(atomic.Int64)
		e.runs[name] = c
	}
	c.Add(1)
	e.got[name] = append(json.RawMessage(nil), args...)
}

// count returns how many calls of the tool ran.
func (e *catalogEnv) count(name string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.runs[name]; c != nil {
		return c.Load()
	}
	return 0
}

// total returns how many calls of any tool ran.
func (e *catalogEnv) total() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, c := range e.runs {
		n += c.Load()
	}
	return n
}

// ctx returns the context of p's calls, the same one for every call of
// the same principal (so that the verdict it carries is reused, as in a
// session); nil is the anonymous principal.
func (e *catalogEnv) ctx(p *policy.Principal) context.Context {
	if p == nil {
		return context.Background()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := fmt.Sprintf("%q %q %v", p.ID, p.Roles, p.Attrs)
	if c, ok := e.ctxs[key]; ok {
		return c
	}
	c := policy.WithPrincipal(context.Background(), *p)
	e.ctxs[key] = c
	return c
}

// call makes a call through the registry.
func (e *catalogEnv) call(p *policy.Principal, name, args string) tool.Result {
	return e.reg.Execute(e.ctx(p), name, json.RawMessage(args))
}

// viewCall makes a call through p's view of the registry.
func (e *catalogEnv) viewCall(p *policy.Principal, name, args string) tool.Result {
	ctx := e.ctx(p)
	return e.a.View(ctx, e.reg).Execute(ctx, name, json.RawMessage(args))
}

// direct calls a tool without the registry: no parsing, no policies.
func (e *catalogEnv) direct(name, args string) tool.Result {
	res, err := e.byID[name].Execute(context.Background(), json.RawMessage(args))
	if err != nil {
		return tool.Result{IsError: true, Error: err.Error()}
	}
	return res
}

// request makes p's call, which must need an approval, and returns the
// approval request.
func (e *catalogEnv) request(t *testing.T, p *policy.Principal, name, args string) policy.ApprovalRequest {
	t.Helper()
	res := e.call(p, name, args)
	req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
	if !ok {
		t.Fatalf("%s %s: %+v, want an approval request", name, args, res)
	}
	return req
}

// grant requests p's call and grants the request.
func (e *catalogEnv) grant(t *testing.T, p *policy.Principal, name, args string) {
	t.Helper()
	if err := e.a.Grant(e.request(t, p, name, args).ID); err != nil {
		t.Fatal(err)
	}
}

// reload reloads the policies, which must load.
func (e *catalogEnv) reload(t *testing.T, src string) {
	t.Helper()
	if err := e.a.Reload("reloaded.cedar", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

// lastDecision returns the audit log's latest decision record.
func (e *catalogEnv) lastDecision(t *testing.T) policy.AuditRecord {
	t.Helper()
	var last policy.AuditRecord
	sc := bufio.NewScanner(bytes.NewReader(e.audit.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r policy.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Event == "decision" {
			last = r
		}
	}
	return last
}

// A catalogTool is a tool of the fixture with a hand-written schema: it
// counts its runs and keeps the arguments it got.
type catalogTool struct {
	name, schema string
	e            *catalogEnv
}

func (c catalogTool) Name() string                { return c.name }
func (c catalogTool) Description() string         { return "A catalog tool." }
func (c catalogTool) Parameters() json.RawMessage { return json.RawMessage(c.schema) }
func (c catalogTool) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	c.e.ran(c.name, args)
	return tool.Result{Output: "done"}, nil
}

type transferArgs struct {
	Amount float64 `json:"amount"`
	To     string  `json:"to"`
}

type countArgs struct {
	N int64 `json:"n"`
}

// paySchema is the schema of pay and refund: amount is a JSON number,
// note has no type at all, and other properties are allowed.
const paySchema = `{"type":"object","properties":{
	"amount":{"type":"number"},"currency":{"type":"string"},"to":{"type":"string"},
	"items":{"type":"array","items":{"type":"number"}},
	"order":{"type":"object","properties":{"total":{"type":"number"}}},
	"note":{}}}`

// catalogTools are the fixture's tools: pay and refund (hand-written
// schemas, arguments passed on as sent), transfer (a Go function of a
// float64, whose arguments the policies see as the encoding of the bound
// value) and count (of an int64).
func catalogTools(e *catalogEnv) []tool.Tool {
	transfer := tool.Must(tool.New("transfer", "Transfers.", func(ctx context.Context, a transferArgs) (string, error) {
		b, _ := json.Marshal(a)
		e.ran("transfer", b)
		return "done", nil
	}))
	count := tool.Must(tool.New("count", "Counts.", func(ctx context.Context, a countArgs) (string, error) {
		b, _ := json.Marshal(a)
		e.ran("count", b)
		return "done", nil
	}))
	return []tool.Tool{catalogTool{"pay", paySchema, e}, catalogTool{"refund", paySchema, e}, transfer, count}
}

// runCatalogRow runs one row, with and without the Authorizer's cache.
func runCatalogRow(t *testing.T, row catalogRow) {
	for _, cached := range []bool{true, false} {
		name := "cached"
		if !cached {
			name = "uncached"
		}
		t.Run(name, func(t *testing.T) { runCatalogRowOnce(t, row, cached) })
	}
}

func (row catalogRow) call(e *catalogEnv) tool.Result {
	if row.view {
		return e.viewCall(row.as, row.tool, row.args)
	}
	return e.call(row.as, row.tool, row.args)
}

func runCatalogRowOnce(t *testing.T, row catalogRow, cached bool) {
	// Positive control: without the defence the attack works.
	if !row.allowed {
		src := row.control
		if src == "" {
			src = catalogPermitAll
		}
		e := newCatalogEnv(t, row, src, cached)
		var res tool.Result
		switch {
		case row.controlCall != nil:
			res = row.controlCall(t, e)
		case row.directControl:
			res = e.direct(row.tool, row.args)
		default:
			res = row.call(e)
		}
		if res.IsError || e.total() == 0 {
			t.Fatalf("positive control: the attack did not run %s without the defence: %+v", row.tool, res)
		}
	}

	// The plain form is refused by the policies in force.
	if row.plain != "" {
		e := newCatalogEnv(t, row, row.policies, cached)
		if res := e.call(row.as, row.tool, row.plain); res.Kind != tool.KindDenied || e.count(row.tool) != 0 {
			t.Fatalf("plain form %s: %+v (ran %d), want it denied", row.plain, res, e.count(row.tool))
		}
	}

	e := newCatalogEnv(t, row, row.policies, cached)
	if row.before != nil {
		row.before(t, e)
	}
	runs := e.count(row.tool)
	res := row.call(e)
	if row.allowed {
		if res.IsError || e.count(row.tool) != runs+1 {
			t.Fatalf("allowed attack: %+v (ran %d times), want it run once", res, e.count(row.tool)-runs)
		}
		if row.seen != nil {
			row.seen(t, e.got[row.tool])
		}
		return
	}
	if res.Kind != row.kind {
		t.Errorf("attack: kind %q, want %q: %s", res.Kind, row.kind, res.Error)
	}
	for _, w := range row.want {
		if !strings.Contains(res.Error, w) {
			t.Errorf("attack: message %q lacks %q", res.Error, w)
		}
	}
	if n := e.count(row.tool) - runs; n != 0 {
		t.Errorf("host-side check: %s ran %d times", row.tool, n)
	}
	if row.failed {
		if errs, _ := res.Metadata["policy_errors"].([]string); len(errs) == 0 {
			t.Errorf("attack: Metadata[\"policy_errors\"] = %v, want the policy that failed", res.Metadata["policy_errors"])
		} else if row.decided != "" && !strings.Contains(strings.Join(errs, "\n"), "`"+row.decided+"`") {
			t.Errorf("attack: policy errors %q do not name %s", errs, row.decided)
		}
	}
	if row.decided != "" {
		rec := e.lastDecision(t)
		if rec.Effect != policy.Deny || !slices.Contains(rec.Policies, row.decided) {
			t.Errorf("audit record: effect %s, policies %v; want deny by %s", rec.Effect, rec.Policies, row.decided)
		}
		// A policy that failed is in the record with its error, not
		// only in the result (issue 25: "the error in the result, the
		// audit record and explain").
		if row.failed && !strings.Contains(rec.Reason, "could not be evaluated") {
			t.Errorf("audit record: reason %q does not say a policy could not be evaluated", rec.Reason)
		}
	}
}

// TestCatalogP runs catalog P.
func TestCatalogP(t *testing.T) {
	seen := map[string]bool{}
	for _, row := range catalogP() {
		if seen[row.id] {
			t.Fatalf("two rows are %s", row.id)
		}
		seen[row.id] = true
		t.Run(row.id+" "+row.name, func(t *testing.T) { runCatalogRow(t, row) })
	}
}

// Principals of the catalog.
var (
	catAnn       = &policy.Principal{ID: "ann", Roles: []string{"clerk"}}
	catBob       = &policy.Principal{ID: "bob", Roles: []string{"clerk"}}
	catAnnAdmin  = &policy.Principal{ID: "ann", Roles: []string{"clerk", "admin"}}
	catAnnTenant = &policy.Principal{ID: "ann", Roles: []string{"clerk"}, Attrs: map[string]any{"tenant": "a"}}
	catAnnOther  = &policy.Principal{ID: "ann", Roles: []string{"clerk"}, Attrs: map[string]any{"tenant": "b"}}
)

// Policies of the catalog's rows.
const (
	// catOver100 forbids amounts over 100.
	catOver100 = catalogPermitAll + `
@id("over-100") @reason("amounts over 100 need a person; send a smaller amount")
forbid (principal, action, resource) when { context.args has amount && context.args.amount > 100 };`
	// catNegative forbids amounts under zero.
	catNegative = catalogPermitAll + `
@id("negative") @reason("amounts may not be negative")
forbid (principal, action, resource) when { context.args has amount && context.args.amount < 0 };`
	// catUSD reads two arguments, within what the fast path models.
	catUSD = catalogPermitAll + `
@id("usd-over-100") @reason("dollar amounts over 100 need a person")
forbid (principal, action, resource == Tool::"pay") when { context.args.currency == "usd" && context.args.amount > 100 };`
	// catAsk asks for an approval of every call.
	catAsk = `@id("ask") @effect("ask") permit (principal, action, resource);`
	// catNoMallory forbids paying mallory.
	catNoMallory = catalogPermitAll + `
@id("no-mallory") @reason("mallory may not be paid")
forbid (principal, action, resource == Tool::"pay") when { context.args has to && context.args.to == "mallory" };`
	// catLevel forbids principals above level 2, for a principal
	// without a level: the condition fails.
	catLevel = catalogPermitAll + `
@id("level") forbid (principal, action, resource) when { principal.level > 2 };`
)

// forbidWhen returns catalogPermitAll and a forbid with id "f" and the
// given scope and conditions.
func forbidWhen(scope, conds string) string {
	return catalogPermitAll + "\n@id(\"f\") forbid (" + scope + ") " + conds + ";"
}

// numberRow is a row of the number forms: amount as args under
// catOver100, refused with the messages want, by over-100 (which reads
// amount, whether its forbid applies or its argument cannot be read).
func numberRow(id, name, args string, want ...string) catalogRow {
	return catalogRow{id: id, name: name, policies: catOver100, as: catAnn, tool: "pay", args: args, plain: `{"amount":150}`,
		kind: tool.KindDenied, want: want, decided: "over-100"}
}

// inexact is the message of a number the policies cannot read exactly.
func inexact(arg, lit string) string {
	return fmt.Sprintf("argument %s = %s cannot be compared exactly", arg, lit)
}

func catalogP() []catalogRow {
	var rows []catalogRow
	for _, part := range [][]catalogRow{catalogNumberRows(), catalogUnicodeRows(), catalogErrorRows(), catalogApprovalRows(), catalogReloadRows()} {
		rows = append(rows, part...)
	}
	return rows
}

// overReason is the refusal of catOver100's forbid.
const overReason = "amounts over 100 need a person"

// catalogNumberRows are number forms: every form of a whole number in
// 64 bits is the same Cedar Long; any other number in an argument a
// policy reads refuses the call, saying which and why.
func catalogNumberRows() []catalogRow {
	return []catalogRow{
		numberRow("P1", "a fraction (Cedar would make it a decimal, which > cannot order)", `{"amount":150.5}`, inexact("amount", "150.5")),
		numberRow("P2", "more decimal places than a Cedar decimal holds", `{"amount":100.00001}`, inexact("amount", "100.00001")),
		numberRow("P3", "a float beyond 64 bits", `{"amount":1e300}`, inexact("amount", "1e300")),
		numberRow("P4", "an exponent form above the largest Long", `{"amount":9.3e18}`, inexact("amount", "9.3e18")),
		numberRow("P5", "a round number beyond 64 bits", `{"amount":1e20}`, inexact("amount", "1e20")),
		numberRow("P6", "2^63, one past the largest Long", `{"amount":9223372036854775808}`, inexact("amount", "9223372036854775808")),
		numberRow("P7", "a whole number written with an exponent", `{"amount":1.5e2}`, overReason),
		numberRow("P8", "a whole number written with a fraction", `{"amount":150.000}`, overReason),
		numberRow("P9", "a whole number written with a negative exponent", `{"amount":15000e-2}`, overReason),
		numberRow("P10", "a whole number between 2^62 and 2^63 written as a fraction", `{"amount":4700000000000000000.0}`, overReason),
		numberRow("P11", "the largest Long written as a fraction", `{"amount":9223372036854775807.0}`, overReason),
		numberRow("P12", "the largest Long", `{"amount":9223372036854775807}`, overReason),
		numberRow("P13", "a huge exponent", `{"amount":1e999999999999999999999}`, inexact("amount", "1e999999999999999999999")),
		numberRow("P14", "a tiny fraction just over the bound", `{"amount":100.0000000000000000000000001}`, inexact("amount", "100.0000000000000000000000001")),
		numberRow("P15", "a capital E and a plus sign", `{"amount":1.5E+2}`, overReason),
		{id: "P16", name: "negative zero, the forbid on negative amounts still exact", policies: catNegative, as: catAnn, tool: "pay",
			args: `{"amount":-0.0}`, allowed: true, seen: seenJSON(`{"amount":-0.0}`)},
		{id: "P17", name: "the smallest Long written as a fraction", policies: catNegative, as: catAnn, tool: "pay",
			args: `{"amount":-9223372036854775808.0}`, plain: `{"amount":-1}`, kind: tool.KindDenied, want: []string{"amounts may not be negative"}, decided: "negative"},
		{id: "P18", name: "one below the smallest Long", policies: catNegative, as: catAnn, tool: "pay",
			args: `{"amount":-9223372036854775809}`, plain: `{"amount":-1}`, kind: tool.KindDenied, want: []string{inexact("amount", "-9223372036854775809")}},
		{id: "P19", name: "a tiny negative number", policies: catNegative, as: catAnn, tool: "pay",
			args: `{"amount":-1e-400}`, plain: `{"amount":-1}`, kind: tool.KindDenied, want: []string{inexact("amount", "-1e-400")}},
		{id: "P20", name: "a fraction in a set hides from isEmpty", as: catAnn, tool: "pay", args: `{"items":[1e300]}`, plain: `{"items":[1]}`,
			policies: forbidWhen("principal, action, resource", `unless { context.args has items && context.args.items.isEmpty() }`),
			kind:     tool.KindDenied, want: []string{inexact("items[0]", "1e300")}},
		{id: "P21", name: "a number Cedar would leave out hides from has", as: catAnn, tool: "pay", args: `{"amount":1e-9}`, plain: `{"amount":1}`,
			policies: forbidWhen("principal, action, resource", `when { context.args has amount }`),
			kind:     tool.KindDenied, want: []string{inexact("amount", "1e-9")}},
		{id: "P22", name: "a nested number beyond 64 bits", as: catAnn, tool: "pay", args: `{"order":{"total":1e20}}`, plain: `{"order":{"total":101}}`,
			policies: forbidWhen("principal, action, resource", `when { context.args has order && context.args.order.total > 100 }`),
			kind:     tool.KindDenied, want: []string{inexact("order.total", "1e20")}},
		{id: "P23", name: "a fraction through the fast path (two arguments read)", policies: catUSD, as: catAnn, tool: "pay",
			args: `{"currency":"usd","amount":150.5}`, plain: `{"currency":"usd","amount":150}`, kind: tool.KindDenied, want: []string{inexact("amount", "150.5")}},
		{id: "P24", name: "a fraction to a typed float64 argument", policies: catOver100, as: catAnn, tool: "transfer",
			args: `{"amount":150.5,"to":"x"}`, plain: `{"amount":150,"to":"x"}`, kind: tool.KindDenied, want: []string{inexact("amount", "150.5")}},
		{id: "P25", name: "2^63 to a typed float64 argument (the policies see the float's encoding)", policies: catOver100, as: catAnn, tool: "transfer",
			args: `{"amount":9223372036854775808,"to":"x"}`, plain: `{"amount":150,"to":"x"}`, kind: tool.KindDenied, want: []string{"cannot be compared exactly"}},
		{id: "P26", name: "a string that looks like a number, to a number argument", policies: catOver100, as: catAnn, tool: "pay",
			args: `{"amount":"150"}`, directControl: true, kind: tool.KindInvalidArguments, want: []string{"expected a number"}},
		{id: "P27", name: "a string that looks like a number, to an untyped argument a forbid orders", as: catAnn, tool: "pay",
			args: `{"note":"150"}`, plain: `{"note":150}`,
			policies: forbidWhen("principal, action, resource", `when { context.args has note && context.args.note > 100 }`),
			kind:     tool.KindDenied, want: []string{"could not be evaluated"}, decided: "f", failed: true},
		{id: "P28", name: "a null in a set hides from isEmpty", as: catAnn, tool: "pay", args: `{"note":[null]}`, plain: `{"note":[1]}`,
			policies: forbidWhen("principal, action, resource", `unless { context.args has note && context.args.note.isEmpty() }`),
			kind:     tool.KindDenied, want: []string{"argument note[0] is null"}},
		{id: "P29", name: "a number with ten thousand digits", policies: catOver100, as: catAnn, tool: "pay",
			args: `{"amount":1` + strings.Repeat("0", 10000) + `}`, plain: `{"amount":150}`, kind: tool.KindDenied, want: []string{"cannot be compared exactly"}},
	}
}

// catalogUnicodeRows are Unicode and case in arguments and names: the
// registry's strict parser refuses a second spelling of a known key; any
// other spelling is another key or value, for the policies and the tool
// alike.
func catalogUnicodeRows() []catalogRow {
	return []catalogRow{
		{id: "P30", name: "a case-variant key", policies: catOver100, as: catAnn, tool: "pay", args: `{"Amount":150}`,
			directControl: true, kind: tool.KindInvalidArguments, want: []string{"case-sensitive"}},
		{id: "P31", name: "a duplicate key", policies: catOver100, as: catAnn, tool: "pay", args: `{"amount":1,"amount":150}`,
			directControl: true, kind: tool.KindInvalidArguments},
		{id: "P32", name: "an escaped key is the same key", policies: catOver100, as: catAnn, tool: "pay", args: `{"\u0061mount":150}`,
			plain: `{"amount":150}`, kind: tool.KindDenied, want: []string{overReason}, decided: "over-100"},
		{id: "P33", name: "a full-width key is another key, for the policy and the tool", policies: catOver100, as: catAnn, tool: "pay",
			args: `{"ａmount":150}`, allowed: true, seen: seenJSON(`{"ａmount":150}`)},
		{id: "P34", name: "a full-width key where the forbid reads the argument unguarded", as: catAnn, tool: "pay", args: `{"ａmount":150}`, plain: `{"amount":150}`,
			policies: forbidWhen("principal, action, resource == Tool::\"pay\"", `when { context.args.amount > 100 }`),
			kind:     tool.KindDenied, want: []string{"could not be evaluated"}, decided: "f", failed: true},
		{id: "P35", name: "a case variant of a value", policies: catNoMallory, as: catAnn, tool: "pay", args: `{"to":"Mallory"}`,
			allowed: true, seen: seenJSON(`{"to":"Mallory"}`)},
		{id: "P36", name: "a combining accent in a value", policies: catNoMallory, as: catAnn, tool: "pay", args: `{"to":"mallory\u0301"}`,
			allowed: true, seen: seenJSON(`{"to":"mallory\u0301"}`)},
		{id: "P37", name: "an escaped value is the same value", policies: catNoMallory, as: catAnn, tool: "pay", args: `{"to":"m\u0061llory"}`,
			plain: `{"to":"mallory"}`, kind: tool.KindDenied, want: []string{"mallory may not be paid"}, decided: "no-mallory"},
		{id: "P38", name: "a full-width tool name", policies: catOver100, as: catAnn, tool: "ｐay", args: `{"amount":150}`,
			controlCall: func(t *testing.T, e *catalogEnv) tool.Result { return e.call(catAnn, "pay", `{"amount":150}`) },
			kind:        tool.KindNotFound},
		{id: "P39", name: "a case variant of a tool name", policies: catOver100, as: catAnn, tool: "Pay", args: `{"amount":150}`,
			controlCall: func(t *testing.T, e *catalogEnv) tool.Result { return e.call(catAnn, "pay", `{"amount":150}`) },
			kind:        tool.KindNotFound},
	}
}

// catalogErrorRows are errors in every position of a policy: a condition
// on the principal, the action, the resource and the context, in when and
// unless, in a forbid, a permit and an asking permit; missing attributes
// and type errors. (A policy's scope cannot fail: it compares entities.)
// Any policy that fails refuses the call, whatever the others say.
func catalogErrorRows() []catalogRow {
	errRow := func(id, name, src, args string) catalogRow {
		return catalogRow{id: id, name: name, policies: src, as: catAnn, tool: "pay", args: args,
			kind: tool.KindDenied, want: []string{"could not be evaluated"}, decided: "f", failed: true}
	}
	all := "principal, action, resource"
	rows := []catalogRow{
		errRow("P40", "a forbid on a principal attribute the principal lacks", forbidWhen(all, `when { principal.level > 2 }`), `{"amount":5}`),
		errRow("P41", "the same in unless", forbidWhen(all, `unless { principal.level <= 2 }`), `{"amount":5}`),
		errRow("P42", "a forbid on an attribute of the action", forbidWhen(all, `when { action.risky }`), `{"amount":5}`),
		errRow("P43", "a forbid on an attribute tools lack", forbidWhen(all, `when { resource.owner == principal }`), `{"amount":5}`),
		errRow("P44", "a forbid on a context attribute that does not exist", forbidWhen(all, `when { context.session == "x" }`), `{"amount":5}`),
		errRow("P45", "a forbid on an argument the call leaves out", forbidWhen(all, `when { context.args.currency == "usd" }`), `{"amount":5}`),
		errRow("P46", "a type error: a string ordered", forbidWhen(all, `when { context.args has currency && context.args.currency > 1 }`), `{"amount":5,"currency":"usd"}`),
		errRow("P47", "a type error: in on a record", forbidWhen(all, `when { principal in context.args.order }`), `{"amount":5,"order":{"total":1}}`),
		errRow("P48", "a type error in the second of two conditions", forbidWhen(all, `when { context.args.amount > 1 } when { principal.level > 2 }`), `{"amount":5}`),
		errRow("P49", "a permit that fails, beside one that allows", catalogPermitAll+`
@id("f") permit (principal, action, resource) when { principal.level > 2 };`, `{"amount":5}`),
		errRow("P50", "an asking permit that fails, beside one that allows", catalogPermitAll+`
@id("f") @effect("ask") permit (principal, action, resource) when { principal.level > 2 };`, `{"amount":5}`),
		errRow("P51", "a failing forbid beside an asking permit: no approval is asked", catAsk+`
@id("f") forbid (principal, action, resource) when { principal.level > 2 };`, `{"amount":5}`),
		{id: "P52", name: "a tool whose forbid fails for the principal is not listed", policies: catLevel, as: catAnn, tool: "pay", args: `{"amount":5}`,
			view: true, kind: tool.KindNotFound},
	}
	return rows
}

// catalogApprovalRows try to use an approval for a call other than the
// one it was granted for: another principal (or the same user with other
// roles or attributes), another tool, other arguments, twice, or after a
// reload that refuses the call.
func catalogApprovalRows() []catalogRow {
	// The control of each: ann's approval serves ann's call.
	annApproved := func(t *testing.T, e *catalogEnv) tool.Result {
		e.grant(t, catAnn, "pay", `{"amount":5}`)
		return e.call(catAnn, "pay", `{"amount":5}`)
	}
	grantAnn := func(t *testing.T, e *catalogEnv) { e.grant(t, catAnn, "pay", `{"amount":5}`) }
	row := func(id, name string, as *policy.Principal, toolName, args string) catalogRow {
		return catalogRow{id: id, name: name, policies: catAsk, control: catAsk, controlCall: annApproved, before: grantAnn,
			as: as, tool: toolName, args: args, kind: tool.KindDenied, want: []string{"needs a person's approval"}}
	}
	// grantedThenReloaded: ann's call approved, then the policies
	// reloaded to src, which must refuse it with want, decided by
	// decided (failed: a policy that fails).
	grantedThenReloaded := func(id, name, src, want, decided string, failed bool) catalogRow {
		r := row(id, name, catAnn, "pay", `{"amount":5}`)
		r.before = func(t *testing.T, e *catalogEnv) {
			grantAnn(t, e)
			e.reload(t, src)
		}
		r.want, r.decided, r.failed = []string{want}, decided, failed
		return r
	}
	tenantApproved := func(t *testing.T, e *catalogEnv) tool.Result {
		e.grant(t, catAnnTenant, "pay", `{"amount":5}`)
		return e.call(catAnnTenant, "pay", `{"amount":5}`)
	}
	return []catalogRow{
		row("P60", "ann's approval, used by bob", catBob, "pay", `{"amount":5}`),
		row("P61", "ann's approval, for another tool", catAnn, "refund", `{"amount":5}`),
		row("P62", "ann's approval, for other arguments", catAnn, "pay", `{"amount":6}`),
		row("P63", "ann's approval, for the same amount spelled otherwise", catAnn, "pay", `{"amount":5.0}`),
		row("P64", "ann's approval, for ann holding another role", catAnnAdmin, "pay", `{"amount":5}`),
		func() catalogRow {
			r := row("P65", "ann's approval in tenant a, used by ann in tenant b", catAnnOther, "pay", `{"amount":5}`)
			r.controlCall = tenantApproved
			r.before = func(t *testing.T, e *catalogEnv) { e.grant(t, catAnnTenant, "pay", `{"amount":5}`) }
			return r
		}(),
		func() catalogRow {
			r := row("P66", "ann's approval, used twice", catAnn, "pay", `{"amount":5}`)
			r.before = func(t *testing.T, e *catalogEnv) {
				if res := annApproved(t, e); res.IsError {
					t.Fatalf("the approved call: %+v", res)
				}
			}
			return r
		}(),
		grantedThenReloaded("P67", "ann's approval, after a reload that forbids the call", catAsk+`
@id("no-pay") @reason("payments are closed") forbid (principal, action, resource == Tool::"pay");`, "payments are closed", "no-pay", false),
		grantedThenReloaded("P68", "ann's approval, after a reload whose new forbid fails", catAsk+`
@id("f") forbid (principal, action, resource) when { principal.level > 2 };`, "could not be evaluated", "f", true),
	}
}

// catalogReloadRows: a reload that fails keeps the old policies, one that
// loads applies to the next call, whatever was cached.
func catalogReloadRows() []catalogRow {
	payOnce := func(t *testing.T, e *catalogEnv) {
		if res := e.call(catAnn, "pay", `{"amount":5}`); res.IsError {
			t.Fatalf("before the reload: %+v", res)
		}
	}
	badReload := func(src string) func(t *testing.T, e *catalogEnv) {
		return func(t *testing.T, e *catalogEnv) {
			if err := e.a.Reload("bad.cedar", []byte(src)); err == nil {
				t.Fatalf("the reload of %q loaded", src)
			}
		}
	}
	missing := func(t *testing.T, e *catalogEnv) {
		if err := e.a.ReloadFile(e.dir + "/missing.cedar"); err == nil {
			t.Fatal("a missing file reloaded")
		}
	}
	forbidPay := catalogPermitAll + `
@id("no-pay") @reason("payments are closed") forbid (principal, action, resource == Tool::"pay");`
	row := func(id, name string, before func(*testing.T, *catalogEnv), want string, decided string) catalogRow {
		return catalogRow{id: id, name: name, policies: forbidPay, as: catAnn, tool: "pay", args: `{"amount":5}`,
			before: before, kind: tool.KindDenied, want: []string{want}, decided: decided}
	}
	return []catalogRow{
		row("P70", "a reload that does not parse", badReload(`permit (principal, action, resource`), "payments are closed", "no-pay"),
		row("P71", "a reload with a policy the Authorizer refuses", badReload(catalogPermitAll+`@effect("ask") forbid (principal, action, resource);`), "payments are closed", "no-pay"),
		row("P72", "a reload of a file that is not there", missing, "payments are closed", "no-pay"),
		// Round 4: names the Authorizer never makes would match nothing, so
		// the forbid of each reload below was dead and pay ran under the
		// permit for all; @Effect was not @effect, and the permit allowed
		// without asking. Each reload now fails, and the forbid in force
		// stays (TestUnknownEntityNamesAreErrors,
		// TestAnnotationCaseVariantIsAnError).
		row("P79", "a reload whose forbid names tool::\"pay\"", badReload(catalogPermitAll+`forbid (principal, action, resource == tool::"pay");`), "payments are closed", "no-pay"),
		row("P80", "a reload whose forbid names Action::\"Call\"", badReload(catalogPermitAll+`forbid (principal, action == Action::"Call", resource == Tool::"pay");`), "payments are closed", "no-pay"),
		row("P81", "a reload whose forbid names role::\"payer\" in a condition", badReload(catalogPermitAll+`forbid (principal, action, resource == Tool::"pay") when { principal in role::"payer" };`), "payments are closed", "no-pay"),
		row("P82", "a reload whose asking permit says @Effect", badReload(`@Effect("ask") permit (principal, action, resource);`), "payments are closed", "no-pay"),
		{id: "P73", name: "a reload to an empty policy set denies all", policies: catalogPermitAll, as: catAnn, tool: "pay", args: `{"amount":5}`,
			before: func(t *testing.T, e *catalogEnv) { payOnce(t, e); e.reload(t, "") },
			kind:   tool.KindDenied, want: []string{"no permission covers this call"}},
		{id: "P74", name: "a reload that adds a forbid, after a cached allow", policies: catalogPermitAll, as: catAnn, tool: "pay", args: `{"amount":5}`,
			before: func(t *testing.T, e *catalogEnv) { payOnce(t, e); e.reload(t, forbidPay) },
			kind:   tool.KindDenied, want: []string{"payments are closed"}, decided: "no-pay"},
		{id: "P75", name: "a reload that drops the permit, after a cached allow", policies: catalogPermitAll, as: catAnn, tool: "pay", args: `{"amount":5}`,
			before: func(t *testing.T, e *catalogEnv) {
				payOnce(t, e)
				e.reload(t, `@id("refunds") permit (principal, action, resource == Tool::"refund");`)
			},
			kind: tool.KindDenied, want: []string{"no permission covers this call"}},
		{id: "P76", name: "a reload that adds a forbid on arguments, after a fast-path allow", policies: catUSD, as: catAnn, tool: "pay", args: `{"currency":"usd","amount":5}`,
			before: func(t *testing.T, e *catalogEnv) {
				if res := e.call(catAnn, "pay", `{"currency":"usd","amount":5}`); res.IsError {
					t.Fatalf("before the reload: %+v", res)
				}
				e.reload(t, catUSD+`
@id("small") @reason("small dollar amounts are closed") forbid (principal, action, resource) when { context.args.currency == "usd" && context.args.amount < 10 };`)
			},
			kind: tool.KindDenied, want: []string{"small dollar amounts are closed"}, decided: "small"},
		{id: "P77", name: "a reload that drops a forbid applies at once too", policies: forbidPay, as: catAnn, tool: "pay", args: `{"amount":5}`,
			before: func(t *testing.T, e *catalogEnv) {
				if res := e.call(catAnn, "pay", `{"amount":5}`); res.Kind != tool.KindDenied {
					t.Fatalf("before the reload: %+v", res)
				}
				e.reload(t, catalogPermitAll)
			},
			allowed: true},
	}
}

// seenJSON checks that the tool received exactly want.
func seenJSON(want string) func(t *testing.T, got json.RawMessage) {
	return func(t *testing.T, got json.RawMessage) {
		t.Helper()
		if string(got) != want {
			t.Errorf("the tool received %s, want %s", got, want)
		}
	}
}
