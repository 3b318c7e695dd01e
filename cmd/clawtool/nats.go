package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	localhost "github.com/miniopenclaw/tool/internal/loopback"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/natstool/mcptasks"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsFlags are the --nats flags: import every tool served on a NATS bus.
type natsFlags struct {
	url     string
	prefix  string
	headers func(context.Context) nats.Header // set by the other flags, such as --as (natspolicy.go)
	// principal applies --as to a call's context (natspolicy.go), for
	// the signed headers of --principal-key.
	principal func(context.Context) context.Context
	// keyFile is --principal-key: the key principal claims are signed
	// (by callers) or verified (by a worker) with.
	keyFile string
	// acceptKeys are --accept-principal-key (serve and worker): keys
	// claims are verified with besides keyFile, while keys are rotated.
	acceptKeys []string
	// trust is --trust-principal-header (serve and worker): believe
	// unsigned principal claims.
	trust bool
}

// addTrustFlag adds --trust-principal-header, for the commands that
// decide calls or jobs for the principal a message claims.
func (n *natsFlags) addTrustFlag(fs *flag.FlagSet, what string) {
	fs.BoolVar(&n.trust, "trust-principal-header", false, "with --policy and without --principal-key, believe the principal every "+what+" claims, unsigned: anyone who can publish on its subjects can then claim to be anyone (only for a NATS server that lets only trusted accounts publish there)")
}

// addAcceptKeyFlag adds --accept-principal-key, for the commands that
// verify signed claims.
func (n *natsFlags) addAcceptKeyFlag(fs *flag.FlagSet) {
	fs.Func("accept-principal-key", "with --principal-key, also take claims signed with the key in `FILE` (while keys are rotated: every verifier accepts the new key, then every caller signs with it, then the old one goes); repeatable", func(s string) error {
		if s == "" {
			return errors.New("a file name, please")
		}
		n.acceptKeys = append(n.acceptKeys, s)
		return nil
	})
}

func addNATSFlags(fs *flag.FlagSet) *natsFlags {
	n := &natsFlags{}
	fs.StringVar(&n.url, "nats", "", "add the tools every clawtool worker serves on the NATS server at `URL` (nats://127.0.0.1:4222)")
	fs.StringVar(&n.prefix, "nats-prefix", "", "put `PREFIX` before the names of tools imported with --nats")
	fs.StringVar(&n.keyFile, "principal-key", "", "with --nats, sign the principal of each call (and of serve's durable tasks) with the shared key in `FILE` (at least 32 bytes, mode 0600), for workers that verify with the same key")
	return n
}

// natsConnect connects to url as the named client, retrying while the
// server is not up yet, and keeps reconnecting for as long as it runs.
// It refuses a URL whose credentials would cross the network in clear
// (natsCredentials).
func natsConnect(url, name string, extra ...nats.Option) (*nats.Conn, error) {
	guard, err := natsCredentials(url)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.Timeout(5 * time.Second),
	}
	opts = append(opts, guard...)
	return nats.Connect(url, append(opts, extra...)...)
}

// natsCredentials keeps the credentials of urls (a comma-separated list
// of NATS URLs) from crossing the network in clear: a URL with a user,
// password or token over plain TCP or websocket (nats://, ws://) to a
// host that is not this machine is an error (the client upgrades to TLS
// only when the server asks, so whoever answers in its place would get
// them); with such a URL to this machine, the servers a cluster names
// are not used (the client would send them the same credentials, in
// clear). A tls:// or wss:// URL requires TLS of every connection.
func natsCredentials(urls string) ([]nats.Option, error) {
	plainCreds := false
	for _, raw := range strings.Split(urls, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		u, err := neturl.Parse(raw)
		if err != nil {
			return nil, errors.New("--nats: a URL of the list cannot be read")
		}
		if u.User == nil || u.Scheme == "tls" || u.Scheme == "wss" {
			continue
		}
		if !localhost.Host(u.Hostname()) {
			return nil, fmt.Errorf("--nats: the URL for %s carries credentials, which %s:// would send in clear to another machine: use tls://%s (the server must offer TLS)", u.Hostname(), u.Scheme, u.Host)
		}
		plainCreds = true
	}
	if plainCreds {
		return []nats.Option{nats.IgnoreDiscoveredServers()}, nil
	}
	return nil, nil
}

// durableTasks keeps the tasks of serve --nats as durable jobs on the
// bus's JetStream (natstool/mcptasks) and runs a worker for them over r in
// this process. Without JetStream on the bus it warns and returns no
// option: the tasks then stay in memory.
func (n *natsFlags) durableTasks(ctx context.Context, e *env, r *tool.Registry, pf *policyFlags) (opts []mcptool.ServerOption, cleanup func(), err error) {
	if n.url == "" {
		return nil, func() {}, nil
	}
	nc, err := natsConnect(n.url, "clawtool serve tasks")
	if err != nil {
		return nil, nil, fmt.Errorf("NATS %s: %w", n.url, err)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// A task waiting for a policy's approval resumes when the request is
	// answered in the store the policy keeps it in (clawtool approvals).
	jo := natstool.JobsOptions{Headers: pf.callHeaders(), Context: pf.callContext(), Logger: discardLogger}
	if n.keyFile != "" {
		// The tasks' claims are signed and verified with --principal-key,
		// as the calls of workers are.
		if jo.Headers, jo.Context, err = signedJobs(n.keyFile, n.acceptKeys, pf.callPrincipal()); err != nil {
			nc.Close()
			return nil, nil, err
		}
		// Their progress is taken only when a worker signed it.
		if jo.ReplyKey, err = replyKey(n.keyFile, n.acceptKeys); err != nil {
			nc.Close()
			return nil, nil, err
		}
	}
	store, err := mcptasks.Open(octx, nc, &mcptasks.Options{Jobs: jo, Approvals: pf.approvals})
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) ||
		errors.Is(err, nats.ErrNoResponders) { // a server without JetStream does not answer its API
		nc.Close()
		fmt.Fprintf(e.stderr, "clawtool: warning: NATS %s has no JetStream: tasks are kept in memory and do not survive a restart\n", n.url)
		return nil, func() {}, nil
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("NATS %s: %w", n.url, err)
	}
	if jo.Context != nil && n.keyFile == "" {
		// The tasks' jobs would be decided for the principal their
		// message claims: fail closed unless told how to trust it.
		if !n.trust {
			store.Close()
			nc.Close()
			return nil, nil, fmt.Errorf("NATS %s keeps tasks as durable jobs, each decided by --policy for the principal its message claims, and a claim is not a proof: give --principal-key FILE to sign and verify the claims, or --trust-principal-header to believe them (anyone who can publish on %s.> can then claim to be anyone)", n.url, mcptasks.DefaultSubject)
		}
		fmt.Fprintln(e.stderr, "clawtool: warning: --trust-principal-header: durable tasks are decided for the principal their job message claims; anyone who can publish on their subjects can claim to be anyone")
	}
	host, _ := os.Hostname()
	w, err := store.Jobs().Work(r, fmt.Sprintf("serve-%s-%d", host, os.Getpid()), natstool.DefaultMaxInFlight)
	if err != nil {
		store.Close()
		nc.Close()
		return nil, nil, fmt.Errorf("NATS %s: %w", n.url, err)
	}
	return []mcptool.ServerOption{mcptool.WithTaskStore(store)}, func() {
		w.Stop()
		store.Close()
		nc.Close()
	}, nil
}

// discardLogger drops the importer's own log lines: importInto reports
// what matters on stderr.
var discardLogger = slog.New(slog.DiscardHandler)

// importInto imports the bus's tools into r. Tools whose names are taken
// by local tools are left out, and reported in one line.
func (n *natsFlags) importInto(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), err error) {
	if n.url == "" && n.keyFile != "" {
		return nil, errors.New("--principal-key needs --nats: it signs the calls sent to NATS workers")
	}
	if n.url == "" {
		return func() {}, nil
	}
	nc, err := natsConnect(n.url, "clawtool")
	if err != nil {
		return nil, fmt.Errorf("NATS %s: %w", n.url, err)
	}
	headers := n.headers
	var replies *natstool.ReplyKey
	if n.keyFile != "" {
		signer, err := readKeyring(n.keyFile, nil, nil)
		if err != nil {
			nc.Close()
			return nil, err
		}
		// Results and progress are taken only when a worker with the
		// key signed them for the call.
		if replies, err = replyKey(n.keyFile, nil); err != nil {
			nc.Close()
			return nil, err
		}
		sign, withAs := natstool.SignedHeaders(signer), n.principal
		headers = func(ctx context.Context) nats.Header {
			if withAs != nil {
				ctx = withAs(ctx)
			}
			return sign(ctx)
		}
	}
	im, err := natstool.Import(ctx, nc, r, &natstool.ImportOptions{Prefix: n.prefix, Logger: discardLogger, CallHeaders: headers, ReplyKey: replies})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("NATS %s: %w", n.url, err)
	}
	if err := im.Sync(ctx); err != nil {
		var dups []string
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.Contains(line, tool.ErrDuplicate.Error()) {
				dups = append(dups, line)
				continue
			}
			fmt.Fprintf(e.stderr, "clawtool: warning: NATS %s: %s\n", n.url, line)
		}
		if len(dups) > 0 {
			fmt.Fprintf(e.stderr, "clawtool: NATS %s: %d tools have the names of tools already here and were left out (use --nats-prefix to keep both)\n", n.url, len(dups))
		}
	}
	return func() {
		im.Close()
		nc.Close()
	}, nil
}

func runWorker(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "worker", "--nats URL [flags]", `Worker serves the tools (the built-in ones and those added with --mcp) to
every clawtool on a NATS bus, as a NATS micro service. Start as many
workers of one service as you like, on as many machines: they share the
calls, and when one goes away the others carry on. It runs until it is
interrupted.`)
	name := fs.String("name", natstool.DefaultServiceName, "the service's `NAME`: workers with the same name share its calls")
	inFlight := fs.Int("max-in-flight", natstool.DefaultMaxInFlight, "run at most `N` calls at once")
	jobs := fs.Bool("jobs", false, "also take durable jobs from the JetStream work queue (the server needs JetStream)")
	ackWait := fs.Duration("jobs-ack-wait", natstool.DefaultAckWait, "with --jobs: give a job to another worker when its worker has been silent for `D`")
	rf := addRegistryFlags(fs)
	rf.nats.addTrustFlag(fs, "caller")
	rf.nats.addAcceptKeyFlag(fs)
	sharedNonces := fs.Bool("shared-nonces", false, "with --principal-key, record the nonce of each signed call in the bus's JetStream bucket "+natstool.DefaultNonceBucket+", shared by every worker given this flag, so that a signed call captured on the bus runs once across the service, not once per worker (the server needs JetStream; a call whose nonce cannot be recorded is refused)")
	fs.Lookup("nats").Usage = "serve on the NATS server at `URL` (required), e.g. nats://127.0.0.1:4222"
	fs.Lookup("principal-key").Usage = "decide only calls (and, with --jobs, jobs) whose principal claim is signed with the shared key in `FILE` (at least 32 bytes, mode 0600); every other one is refused"
	fs.Lookup("nats-prefix").Usage = "not for worker: a worker serves its tools under their own names"
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	// --nats names the bus to serve on; the worker does not import from it.
	url := rf.nats.url
	rf.nats.url = ""
	if url == "" {
		return usageError(fs, "--nats URL is required: the NATS server to serve on")
	}
	if rf.nats.prefix != "" {
		return usageError(fs, "--nats-prefix is for importing tools; a worker serves its tools under their own names")
	}
	if *sharedNonces && rf.nats.keyFile == "" {
		return usageError(fs, "--shared-nonces needs --principal-key: it records the nonces of signed calls")
	}
	callContext, code := workerCallContext(fs, e, rf, rf.nats.trust)
	if code >= 0 {
		return code
	}
	keyFile, acceptKeys := rf.nats.keyFile, rf.nats.acceptKeys
	rf.nats.keyFile, rf.nats.acceptKeys = "", nil                         // read: the worker verifies with them, and imports nothing to sign for
	rf.policy.approvalsNATS = url                                         // its policy's approvals are the bus's
	rf.policy.approvalKey, rf.policy.approvalAccept = keyFile, acceptKeys // and answers there are sealed with the key
	r, cleanup, ok := rf.open(ctx, e, "worker")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	nc, err := natsConnect(url, "clawtool worker "+*name)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
		return exitToolError
	}
	defer nc.Close()
	if *sharedNonces {
		nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		nonces, err := natstool.OpenNonces(nctx, nc, nil)
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool worker: --shared-nonces (the server needs JetStream): %v\n", err)
			return exitToolError
		}
		if callContext, err = verifiedCalls(keyFile, acceptKeys, nonces); err != nil {
			fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
			return exitToolError
		}
	}
	serveOpts := &natstool.ServeOptions{Name: *name, MaxInFlight: *inFlight, CallContext: callContext}
	if keyFile != "" {
		// Results and progress are signed for the callers that hold the key.
		if serveOpts.ReplyKey, err = replyKey(keyFile, acceptKeys); err != nil {
			fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
			return exitToolError
		}
	}
	if *jobs {
		jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		jo := &natstool.JobsOptions{AckWait: *ackWait, ReplyKey: serveOpts.ReplyKey}
		if keyFile != "" {
			if _, jo.Context, err = signedJobs(keyFile, acceptKeys, nil); err != nil {
				cancel()
				fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
				return exitToolError
			}
		}
		j, err := natstool.OpenJobs(jctx, nc, jo)
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool worker: --jobs: %v\n", err)
			return exitToolError
		}
		serveOpts.Jobs = j
	}
	svc, err := natstool.Serve(nc, r, serveOpts)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
		return exitToolError
	}
	fmt.Fprintf(e.stderr, "clawtool: worker of service %s serving %d tools on %s\n", *name, r.Len(), url)
	<-ctx.Done()
	if err := svc.Stop(); err != nil {
		fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
	}
	return exitOK
}

func runNATSServer(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "nats-server", "[--addr ADDR] [--jetstream DIR]", `Nats-server runs a NATS server inside clawtool, for a one-machine setup
where nothing else is installed: workers and clients connect to the URL it
prints on standard error. It listens on 127.0.0.1:4222 unless --addr says
otherwise, and runs until it is interrupted. For production, run a real
nats-server cluster instead; clawtool speaks to it the same way.`)
	addr := fs.String("addr", "127.0.0.1:4222", "listen on `ADDR` (host:port; port 0 picks a free one)")
	jsDir := fs.String("jetstream", "", "enable JetStream (large results, durable jobs and tasks) with its store in `DIR`, synced to disk on every write")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	host, portText, err := net.SplitHostPort(loopbackDefault(*addr))
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool nats-server: --addr: %v\n", err)
		return exitUsage
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		fmt.Fprintf(e.stderr, "clawtool nats-server: --addr: bad port %q\n", portText)
		return exitUsage
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	// SyncAlways (sync_interval: always): a job or task the server
	// acknowledged is on disk, and survives a power loss; the default
	// interval may lose the last two minutes of acknowledged writes.
	opts := &server.Options{Host: host, Port: port, NoSigs: true, NoLog: true, JetStream: *jsDir != "", StoreDir: *jsDir, SyncAlways: *jsDir != ""}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool nats-server: %v\n", err)
		return exitToolError
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		fmt.Fprintln(e.stderr, "clawtool nats-server: the server did not start (is the port taken?)")
		return exitToolError
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(e.stderr, "clawtool: WARNING: the NATS server listens on %s without authentication: anyone who reaches it can call every tool\n", host)
	}
	fmt.Fprintf(e.stderr, "clawtool: NATS server at %s\n", s.ClientURL())
	<-ctx.Done()
	s.Shutdown()
	s.WaitForShutdown()
	return exitOK
}
