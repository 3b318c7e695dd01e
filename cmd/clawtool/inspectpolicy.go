package main

import (
	"context"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"io"

	"github.com/miniopenclaw/tool/inspector"
	"github.com/miniopenclaw/tool/policy"
)

// inspectorOptions returns what the inspector offers under --policy: a
// "call as" that decides a call for the principal the page names, the
// Approvals tab, answering as --as (never as the page's "call as": the
// page's holder may call as anyone, and would otherwise approve its own
// calls), and, with --audit, the audit log's records.
func (pf *policyFlags) inspectorOptions() []inspector.Option {
	if pf.loaded == nil {
		return nil
	}
	opts := []inspector.Option{inspector.WithCallAs(func(ctx context.Context, id string, roles []string) (context.Context, error) {
		return policy.WithPrincipal(ctx, policy.Principal{ID: id, Roles: roles}), nil
	})}
	as, _, _ := pf.principal() // the zero Principal without --as; an error was reported when loaded was made
	opts = append(opts, inspector.WithApprovals(inspector.NewApprovals(pf.approvalStore(), pf.loaded, as)))
	if file := pf.audit; file != "" {
		// Reopened for each request: a named pipe put in its place would
		// block the page's handler, so only a regular file is read.
		opts = append(opts, inspector.WithAuditLog(func() (io.ReadSeekCloser, error) {
			f, _, err := regularfile.Open(file)
			if err != nil {
				return nil, err
			}
			return f, nil
		}))
	}
	return opts
}
