package main

import (
	"context"
	"io"
	"os"

	"github.com/miniopenclaw/tool/inspector"
	"github.com/miniopenclaw/tool/policy"
)

// inspectorOptions returns what the inspector offers under --policy: a
// "call as" that decides a call for the principal the page names, and,
// with --audit, the audit log's records.
func (pf *policyFlags) inspectorOptions() []inspector.Option {
	if pf.loaded == nil {
		return nil
	}
	opts := []inspector.Option{inspector.WithCallAs(func(ctx context.Context, id string, roles []string) (context.Context, error) {
		return policy.WithPrincipal(ctx, policy.Principal{ID: id, Roles: roles}), nil
	})}
	if file := pf.audit; file != "" {
		opts = append(opts, inspector.WithAuditLog(func() (io.ReadSeekCloser, error) { return os.Open(file) }))
	}
	return opts
}
