package tool

import (
	"context"
	"log/slog"
)

// A ProgressFunc receives progress reports from a running tool call:
// progress is the amount of work done so far, total is the amount expected
// in all (0 when unknown), and message optionally says what is happening.
// It may be called from the tool's goroutine at any time until the call
// returns, so it must be safe for concurrent use and return quickly.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns a copy of ctx that carries fn: a tool called with
// the returned context (directly, or through [Registry.Execute], whose
// call context derives from it) reports its progress to fn through
// [ReportProgress]. Protocol adapters use it to relay progress to a remote
// caller, for example as MCP notifications/progress.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress reports the progress of the tool call that ctx belongs
// to; it is how a tool tells a waiting caller how far it has got. It does
// nothing, cheaply, when the caller did not ask for progress (ctx carries
// no [ProgressFunc]) or when ctx is already done. progress should grow with
// every report; adapters may drop reports that do not grow, as MCP
// requires.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	if fn == nil || ctx.Err() != nil {
		return
	}
	fn(progress, total, message)
}

type clientLoggerKey struct{}

// discardLogger is what ClientLogger returns when no caller listens.
var discardLogger = slog.New(slog.DiscardHandler)

// WithClientLogger returns a copy of ctx that carries l: a tool called
// with the returned context logs to l through [ClientLogger]. Protocol
// adapters use it to relay a tool's log messages to the remote caller,
// for example as MCP notifications/message at the level the client chose.
//
// This is not the operator's log (see [WithLogger]): messages sent here
// are for whoever made the call, and a tool should write nothing there it
// would not show that caller.
func WithClientLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, clientLoggerKey{}, l)
}

// ClientLogger returns the logger for messages to the caller of the tool
// call that ctx belongs to, attached with [WithClientLogger]. It never
// returns nil: when no caller listens, it returns a logger that discards
// everything, cheaply (its Enabled is false at every level).
func ClientLogger(ctx context.Context) *slog.Logger {
	if l, _ := ctx.Value(clientLoggerKey{}).(*slog.Logger); l != nil {
		return l
	}
	return discardLogger
}
