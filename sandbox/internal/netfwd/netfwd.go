// Package netfwd is the network forwarder of a container run under a
// network allow list. The container has no network but its loopback; the
// forwarder is this program's own binary, bind-mounted read-only into the
// container (as the call server of a warm container is) and started as
// its main process with [helper.Env] set to [Mode]. It listens on the
// container's loopback at the address of [ListenEnv] and joins each
// connection to the unix socket of [SocketEnv], where the supervisor's
// allow-list proxy (sandbox.Proxy) accepts outside the container; then it
// starts the command (its own arguments) as the user of [UserEnv] with the
// rest of its environment, and exits as the command did (128+N for a
// signal N, as the engine reports a container's end).
//
// The forwarder decides nothing: every check is the proxy's, outside the
// container. A forwarder that dies takes the container's only way out
// with it.
package netfwd

// Mode is the value of helper.Env that makes a program the forwarder.
const Mode = "netfwd"

// The forwarder's environment; it removes these before starting the
// command.
const (
	// SocketEnv is the path of the proxy's unix socket in the container.
	SocketEnv = "CLAWTOOL_NETFWD_SOCKET"
	// ListenEnv is the loopback address to listen on, "127.0.0.1:3128".
	ListenEnv = "CLAWTOOL_NETFWD_LISTEN"
	// UserEnv is "UID:GID", the user the command runs as.
	UserEnv = "CLAWTOOL_NETFWD_USER"
)

// NotFound starts the line the forwarder writes on standard error, before
// exiting with status 127, when the command is not in the PATH of its
// environment or cannot be executed.
const NotFound = "clawtool-sandbox: cannot execute "

// MaxConns bounds the connections the forwarder joins at once; one more
// is closed at once.
const MaxConns = 128
