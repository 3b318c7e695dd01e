package plugins

import "log/slog"

// An AddedServer is an MCP server a program adds to every configuration
// its [Host] applies, such as one its command line names (see
// [WithServers]).
type AddedServer struct {
	// Name is the entry's name in [Host.Status] and the log. A server of
	// the configuration with the same name is left out, and logged.
	Name string
	// Server is the entry, as it would be written in "mcpServers"
	// (no ${NAME} is expanded). One that does not check fails its entry.
	Server Server
	// Logger, if not nil, receives the records about this entry
	// instead of the host's logger (see [WithLogger] and the Event
	// constants), so that a program can report them in its own words.
	Logger *slog.Logger
	// LoginHint, if not empty, replaces "log in with: clawtool auth
	// login NAME --config FILE" in the error of a URL server whose OAuth
	// tokens are missing or refused.
	LoginHint string
}

// WithServers adds servers to every configuration the host applies
// ([Host.Apply], [Host.Reload], [Host.Watch]): each is an entry like one
// of the configuration's "mcpServers", under its "sandboxPolicy" and
// "defaults", authorized with OAuth, restarted when it exits, reported
// by [Host.Status] and closed by [Host.Close]. They start before the
// configuration's entries, one after another in the order given (each
// once the one before has loaded or failed), so that a tool name two of
// them serve goes to the earlier one, and one an added server and an
// entry of the configuration serve goes to the added server.
func WithServers(servers ...AddedServer) Option {
	return func(h *Host) { h.added = append(h.added, servers...) }
}

// The values of the "event" attribute of a log record about one entry:
// what happened to it. The record's message says it in words; a program
// that reports in its own words (see [AddedServer.Logger]) reads the
// event and the attributes named here.
const (
	// EventFailed: the entry could not be loaded; "error" says why.
	EventFailed = "failed"
	// EventPartial: part of the entry was left out (a tool that could
	// not be imported); "error" says what, one problem a line.
	EventPartial = "partial"
	// EventTaken: tools of the entry were left out because others have
	// their names; "taken" is a []string of the names, sorted. One
	// record per import.
	EventTaken = "taken"
	// EventCut: the server listed more tools than its cap; "leftOut",
	// "maxTools" (ints) and "atLeast" (bool) are those of [Cut].
	EventCut = "cut"
	// EventRestarting and EventGivenUp: the server ended on its own
	// and is being restarted, or was given up (see [RestartPolicy]);
	// "error" says why.
	EventRestarting = "restarting"
	EventGivenUp    = "givenUp"
	// EventReimported: the server's tools were imported again after it
	// said they changed; "added", "changed" and "removed" count them.
	EventReimported = "reimported"
	// EventNetworkDenied: the allow-list proxy of a confined server
	// refused it a connection; "host", "port" (int), "addr" and "reason"
	// are those of sandbox.NetworkDenial.
	EventNetworkDenied = "networkDenied"
)
