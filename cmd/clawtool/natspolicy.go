package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

// The principal over NATS: a command that imports tools with --nats sends
// the principal of each call (--as, or the one its context carries) in
// the policy.HeaderPrincipal header, and a worker started with --policy
// decides each call for the principal that header names, falling back to
// its own --as, then to the anonymous principal.
//
// Trust: a claim is only a claim. A worker with --policy refuses to start
// unless it is given --principal-key FILE, and then decides only calls
// whose claim is signed with that shared key for that very call
// (policy.HeaderSigner, natstool.VerifiedContext), callers signing with
// --principal-key too; or --trust-principal-header, which believes any
// claim and is only for a NATS server that lets only trusted accounts
// publish on the service's subjects. With --principal-key, durable jobs
// (worker --jobs, and the tasks of serve --nats) are signed and verified
// too, with the age bound of the job queue's TTL (signedJobs). Verifiers
// (worker, and serve for its tasks) also take claims signed with the keys
// of --accept-principal-key, each found by the key id a signature names,
// so that keys rotate without stopping anything; a worker given
// --shared-nonces records the nonces of the calls it takes in the bus's
// JetStream bucket, so that a captured call runs once across the service.

// forwardPrincipal prepares the flags for calls that leave the process:
// with --nats, --as is allowed without --policy, and the imported tools
// send the caller's principal.
func (rf *registryFlags) forwardPrincipal() {
	if rf.nats.url == "" {
		return
	}
	rf.policy.approvalsNATS = rf.nats.url
	rf.policy.approvalKey, rf.policy.approvalAccept = rf.nats.keyFile, rf.nats.acceptKeys
	rf.policy.forward = true
	rf.nats.headers = rf.policy.callHeaders()
	rf.nats.principal = rf.policy.callPrincipal()
}

// callPrincipal returns the function that gives a call's context the
// principal it is sent for: the one it carries, else --as.
func (pf *policyFlags) callPrincipal() func(context.Context) context.Context {
	as, hasAs, err := pf.principal()
	if err != nil {
		hasAs = false // reported when the registry is built
	}
	return func(ctx context.Context) context.Context {
		if _, ok := policy.PrincipalFrom(ctx); !ok && hasAs {
			ctx = policy.WithPrincipal(ctx, as)
		}
		return ctx
	}
}

// signedJobs returns the Headers and Context of a job queue whose claims
// are signed and verified with the key in keyFile: the principal of a
// job is withAs's (when set) of the submitter's context. A job waits in
// the queue and is delivered again when its worker dies, so its claim is
// good for the queue's longest wait (natstool.DefaultJobTTL) and more
// than once; the job's record keeps a job that is done from running
// again.
func signedJobs(keyFile string, acceptKeys []string, withAs func(context.Context) context.Context) (func(context.Context) nats.Header, func(context.Context, nats.Header) (context.Context, error), error) {
	signer, err := readKeyring(keyFile, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	verifier, err := readKeyring(keyFile, acceptKeys, &policy.HeaderSignerOptions{MaxAge: natstool.DefaultJobTTL, Repeats: true})
	if err != nil {
		return nil, nil, err
	}
	sign := natstool.SignedHeaders(signer)
	headers := func(ctx context.Context) nats.Header {
		if withAs != nil {
			ctx = withAs(ctx)
		}
		return sign(ctx)
	}
	return headers, natstool.VerifiedJobContext(verifier), nil
}

// readKeyring reads --principal-key (the key signatures are made with)
// and the keys of --accept-principal-key (taken besides it) into a signer
// with the options o (nil for the defaults). Each key's id is
// policy.KeyID of its bytes.
func readKeyring(keyFile string, acceptKeys []string, o *policy.HeaderSignerOptions) (*policy.HeaderSigner, error) {
	key, err := policy.ReadSignerKeyFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--principal-key: %w", err)
	}
	opts := policy.HeaderSignerOptions{}
	if o != nil {
		opts = *o
	}
	for _, name := range acceptKeys {
		k, err := policy.ReadSignerKeyFile(name)
		if err != nil {
			return nil, fmt.Errorf("--accept-principal-key: %w", err)
		}
		opts.AcceptKeys = append(opts.AcceptKeys, policy.SignerKey{Secret: k})
	}
	s, err := policy.NewHeaderSigner(key, &opts)
	if err != nil {
		return nil, fmt.Errorf("--principal-key, --accept-principal-key: %w", err)
	}
	return s, nil
}

// replyKey returns the key that signs (worker) and verifies (caller)
// what workers send back, results and progress (natstool.ReplyKey),
// derived from --principal-key and, to verify, the keys of
// --accept-principal-key: a process that signs or verifies claims with
// the key also authenticates the replies.
func replyKey(keyFile string, acceptKeys []string) (*natstool.ReplyKey, error) {
	key, err := policy.ReadSignerKeyFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--principal-key: %w", err)
	}
	var accept [][]byte
	for _, name := range acceptKeys {
		k, err := policy.ReadSignerKeyFile(name)
		if err != nil {
			return nil, fmt.Errorf("--accept-principal-key: %w", err)
		}
		accept = append(accept, k)
	}
	return natstool.NewReplyKey(key, accept...)
}

// verifiedCalls returns the worker's CallContext that verifies calls with
// the keyring of keyFile and acceptKeys, recording nonces in nonces (the
// verifier's memory when nil).
func verifiedCalls(keyFile string, acceptKeys []string, nonces policy.NonceStore) (func(context.Context, nats.Header) (context.Context, error), error) {
	v, err := readKeyring(keyFile, acceptKeys, &policy.HeaderSignerOptions{Nonces: nonces})
	if err != nil {
		return nil, err
	}
	return natstool.VerifiedContext(v), nil
}

// workerCallContext returns the worker's natstool.ServeOptions.CallContext
// for its flags, or an exit code (>= 0) after reporting why the flags do
// not go together. The default refuses: a worker with --policy needs
// --principal-key or, naming the risk, --trust-principal-header.
func workerCallContext(fs *flag.FlagSet, e *env, rf *registryFlags, trust bool) (func(context.Context, nats.Header) (context.Context, error), int) {
	key, hasPolicy := rf.nats.keyFile, rf.policy.file != ""
	switch {
	case len(rf.nats.acceptKeys) > 0 && key == "":
		return nil, usageError(fs, "--accept-principal-key needs --principal-key: the key this process signs with, accepted too")
	case key != "" && trust:
		return nil, usageError(fs, "--principal-key and --trust-principal-header: give one (the key verifies claims; the flag believes them)")
	case trust && !hasPolicy:
		return nil, usageError(fs, "--trust-principal-header needs --policy: without one, no call is decided for its principal")
	case hasPolicy && key == "" && !trust:
		return nil, usageError(fs, "--policy decides each call for the principal its caller claims, and a claim is not a proof: give --principal-key FILE to take only claims signed with that shared key (callers sign with --principal-key FILE), or --trust-principal-header to believe any claim (anyone who can publish on the service's subjects can then claim to be anyone)")
	case key != "":
		verify, err := verifiedCalls(key, rf.nats.acceptKeys, nil)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool worker: %v\n", err)
			return nil, exitToolError
		}
		return verify, -1
	case trust:
		fmt.Fprintln(e.stderr, "clawtool: warning: --trust-principal-header: this worker believes the principal every caller claims; anyone who can publish on its subjects can claim to be anyone")
		return func(ctx context.Context, h nats.Header) (context.Context, error) { return policy.FromHeaders(ctx, h) }, -1
	}
	return nil, -1 // no --policy: no call is decided for its principal
}

// callHeaders returns the function that makes imported NATS tools send
// the principal of each call: the one its context carries, else --as.
// This is the client side: with --nats and no --policy there is no
// Authorizer in this process whose policy.WithDefaultPrincipal could
// supply --as, so the default is applied here, to the outgoing header
// only (the worker decides).
func (pf *policyFlags) callHeaders() func(context.Context) nats.Header {
	withAs := pf.callPrincipal()
	return func(ctx context.Context) nats.Header { return policy.Headers(withAs(ctx)) }
}

// callContext returns the function that makes a worker with --policy
// decide each call for the principal its caller sent (see above for why
// that needs an authenticated NATS connection), nil without --policy.
func (pf *policyFlags) callContext() func(context.Context, nats.Header) (context.Context, error) {
	if pf.loaded == nil {
		return nil
	}
	return func(ctx context.Context, h nats.Header) (context.Context, error) {
		return policy.FromHeaders(ctx, h)
	}
}

// natsApprovals is the approval store of a command given --nats and
// --policy: the JetStream bucket every worker and every clawtool
// approvals --nats shares (natstool.Approvals). It connects on first
// use, and again after a failure; while it cannot, every method fails,
// so a call that needs an approval is refused, saying why (fail closed).
type natsApprovals struct {
	url string
	mu  sync.Mutex
	nc  *nats.Conn
	s   *natstool.Approvals
}

func (n *natsApprovals) store(ctx context.Context) (*natstool.Approvals, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.s != nil {
		return n.s, nil
	}
	guard, err := natsCredentials(n.url)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	opts := append([]nats.Option{nats.Name("clawtool approvals"), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}, guard...)
	nc, err := nats.Connect(n.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("approvals: NATS %s: %w", n.url, err)
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := natstool.OpenApprovals(octx, nc, nil)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("approvals: NATS %s (the server needs JetStream): %w", n.url, err)
	}
	n.nc, n.s = nc, s
	return s, nil
}

// close closes the connection, if one was made.
func (n *natsApprovals) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nc != nil {
		n.nc.Close()
		n.nc, n.s = nil, nil
	}
}

func (n *natsApprovals) Put(ctx context.Context, r policy.ApprovalRecord, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Put(ctx, r, now)
}

func (n *natsApprovals) Get(ctx context.Context, id string, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Get(ctx, id, now)
}

func (n *natsApprovals) Pending(ctx context.Context, now time.Time) ([]policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Pending(ctx, now)
}

func (n *natsApprovals) Answer(ctx context.Context, id string, a policy.ApprovalAnswer, now time.Time) (policy.ApprovalRecord, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, err
	}
	return s.Answer(ctx, id, a, now)
}

func (n *natsApprovals) Consume(ctx context.Context, digest string, now time.Time) (policy.ApprovalRecord, bool, error) {
	s, err := n.store(ctx)
	if err != nil {
		return policy.ApprovalRecord{}, false, err
	}
	return s.Consume(ctx, digest, now)
}
