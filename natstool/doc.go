// Package natstool carries tool calls over NATS, so that tools served by
// many worker processes, on many machines, are found and called by name
// from any registry.
//
// # Serving
//
// [Serve] makes a [tool.Registry] a NATS micro service: one endpoint per
// tool, in a queue group named after the service, so that N workers that
// serve the same tools share the calls and a worker that goes away leaves
// the others to carry on. Every endpoint's metadata holds the tool's
// [Definition]; the service answers $SRV.PING, $SRV.INFO and $SRV.STATS
// like every micro service, so the nats command line tool lists it too.
// Calls run through [tool.Registry.Execute]: its strict parsing,
// validation, time limits and panic guard apply on the worker.
//
// # Importing
//
// [Import] finds the services on a connection and registers their tools
// in a local registry, where they are called like any other tool, and
// keeps the registry in sync as services start, change and stop. See
// [Importer] for how names are chosen and what each failure becomes.
//
// # Failure
//
// A call no worker receives fails at once, as [tool.KindUnavailable]. A
// worker that dies during a call stops sending heartbeats, and the call
// fails as unavailable after [ImportOptions.WorkerTimeout], well within its own time
// limit; that error is marked [tool.Transient], so an [tool.Executor]
// retries an idempotent tool on another worker. The NATS client reconnects
// on its own after a server restart or the loss of one server of a
// cluster; calls in flight then fail clearly and later calls succeed.
//
// # Durable jobs
//
// For long-running tools, [Jobs] is a JetStream work queue of calls:
// [Jobs.Submit] returns a job id at once, any worker that consumes the
// queue ([ServeOptions.Jobs] or [Jobs.Work]) runs the call, and the outcome is kept
// in a key-value bucket for [Jobs.Wait] and [Jobs.Job]. A job whose worker
// dies is delivered to another after the ack wait, and is completed once;
// [SubmitOptions.IdempotencyKey] makes a resubmitted call return the first job.
// [JobsOptions.Headers] puts the submitter's principal (policy.Headers) on the
// job, and [JobsOptions.Context], or the service's [ServeOptions.CallContext], restores
// it on the worker, so that the worker's policy decides the job for whoever
// submitted it ([SignedHeaders] and [VerifiedJobContext] sign and verify that claim). A job is its submitter's ([JobsOptions.Owner]): an idempotency
// key is scoped to the owner, and another owner's Wait and Job get
// [ErrJobNotFound]. A job whose tool the worker lacks is handed back to the
// others, and after its last delivery ends as unavailable.
//
// # Approvals
//
// [Approvals] is a policy.ApprovalStore in a JetStream key-value bucket:
// the approval requests of every worker's policy, answered from any
// connection, each answer kept once and used once (compare-and-swap on
// the key's revision), bounded, and failing closed when the bucket is
// unreachable, full or holds what is not a record.
//
// # Wire protocol
//
// A call is a NATS request on the tool's subject (PREFIX.SERVICE.TOOL)
// whose body is the JSON arguments. Its reply subject receives, in order:
// heartbeats and progress reports (header [HeaderKind]), then the JSON
// [tool.Result], without headers. A result larger than the server's max
// payload goes through a JetStream object store ([ServeOptions.ObjectStore]); the
// reply then names the object ([HeaderObject], [HeaderBucket]), whose
// metadata names the call's reply subject ([HeaderResultFor]): the
// importer reads and deletes no other object.
//
// The milliseconds the caller has left travel with the request, at the end
// of the reply subject's last token, after [ReplyTimeoutMark], as in
// _INBOX.k3Xz.7f~t30000, so that a plain call carries no NATS headers at
// all. A service says which wire protocol it speaks in its metadata
// ([MetadataProtocol]); an importer imports the tools of a service only
// when every instance it found speaks protocol 2 or later, since a call
// may reach any worker of the queue group. Other headers an importer
// sends ([ImportOptions.CallHeaders]) travel as headers. A deadline a
// worker cannot read ends the call with an error of kind
// invalid_arguments, and the tool does not run.
//
// # Who calls
//
// A principal header (policy.Headers) is a claim anyone who can publish
// on a tool's subject can write. [SignedHeaders] signs it with a shared
// key (policy.HeaderSigner), bound to the call's [Request]: its subject,
// reply subject and arguments; [VerifiedContext] on the worker refuses,
// as denied, every call whose claim is not signed with a key of its
// keyring for that very call, is stale, or was already taken: by this
// worker, or, when the workers' verifiers share [Nonces], by any.
package natstool
