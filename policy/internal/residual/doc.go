// Package residual is policy's fast path and its JSON argument reader.
//
// A [Program] decides calls without Cedar when the residual conditions
// Cedar's partial evaluation leaves of a principal's policies for a tool
// read only top-level arguments through a few operations; it answers only
// when each step it takes is one whose result it knows to be Cedar's, and
// otherwise says Cedar must decide. The reader turns a call's checked
// arguments into the record Cedar sees as context.args ([ContextArgs]),
// refusing the numbers Cedar cannot compare exactly ([FirstInexact]) and
// the paths it cannot read one way only ([CleanPath]).
//
// Package policy is its only user: following one decision reads top-down
// in policy, and the fast path is one call, [Program.Decide].
package residual
