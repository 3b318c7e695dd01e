// Package policy decides who may call which tool with which arguments,
// with Cedar policies, approvals bound to the exact call, rate limits and
// a tamper-evident audit log.
//
// An [Authorizer] implements tool.Authorizer: a registry made with
// tool.WithAuthorizer consults it on every call it runs, whichever path
// the call came by (Registry.Execute, an Executor, the agent loop, an MCP
// server or a NATS worker built on the registry), after the arguments have
// been parsed strictly and validated and their defaults applied. The
// [Principal] a call is made for travels in its context ([WithPrincipal]).
//
// A policy file for two roles, where operators inherit from analysts
// (WithRoleParents(map[string][]string{"operator": {"analyst"}})):
//
//	@id("analyst-read")
//	permit (principal in Role::"analyst", action == Action::"call", resource)
//	when { resource.readOnly };
//
//	@id("operator-notes-delete")
//	@effect("ask")
//	permit (principal in Role::"operator", action == Action::"call", resource == Tool::"kv")
//	when { context.args.op == "delete" };
//
//	@id("no-admin-keys")
//	@reason("keys under admin/ are reserved; use another key")
//	forbid (principal, action, resource == Tool::"kv")
//	when { context.args has key && context.args.key like "admin/*" };
//
// Calls are denied unless a permit applies, and a forbid that applies
// wins; a policy that cannot be evaluated for a call refuses it (Cedar
// would skip it); a permit annotated @effect("ask") makes the call wait for an
// approval (see [Authorizer] for the whole model, [Approver] and
// [Authorizer.Grant] for approvals). [Check] validates policies against a
// Cedar schema made from the tools' definitions. [AuditLog] keeps every
// decision in a hash-chained JSON Lines file that [VerifyAudit] checks.
// [Authorizer.View] shows a principal only the tools it could call. Over HTTP, package
// policy/bearer takes the principal from a verified bearer token. Path conditions see the path a tool will open when the tool
// resolves its paths before the call is decided ([tool.WithResolve], as
// the workspace tools do); [WithPathArguments] cleans the paths of other
// tools and refuses those it cannot read one way only.
package policy
