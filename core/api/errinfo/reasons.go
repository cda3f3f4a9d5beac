package errinfo

// Why is the type of a reason: a stable UPPER_SNAKE word that says which of the answers a
// status code covers this one is, so a caller can act on it without
// parsing the message. Every reason is listed, with its code and meaning,
// in docs/api.md (TestReasonsAreDocumented); a reason, once sent, is
// never renamed.
type Why string

// Reasons of arguments refused at the edge: INVALID_ARGUMENT, with the
// field in the metadata ("field").
const (
	// ReasonInvalidName: a sandbox, template or pool name, or a namespace,
	// is missing where required or not a DNS-1123 label.
	ReasonInvalidName Why = "INVALID_NAME"
	// ReasonInvalidLabels: too many labels, a bad key or value, a key under
	// sandpod.dev/.
	ReasonInvalidLabels Why = "INVALID_LABELS"
	// ReasonInvalidEnv: too many variables, a bad or reserved name, a NUL,
	// or more bytes than the kernel accepts.
	ReasonInvalidEnv Why = "INVALID_ENV"
	// ReasonInvalidRequestID: a request_id too long or not printable ASCII.
	ReasonInvalidRequestID Why = "INVALID_REQUEST_ID"
	// ReasonInvalidLifetime: ttl, shutdown_time or shutdown_policy out of
	// range, both given, or neither where one is needed.
	ReasonInvalidLifetime Why = "INVALID_LIFETIME"
	// ReasonInvalidDuration: a duration other than the lifetime (an exec's
	// timeout) is not valid or negative.
	ReasonInvalidDuration Why = "INVALID_DURATION"
	// ReasonInvalidSelector: a label_selector that does not parse or is too long.
	ReasonInvalidSelector Why = "INVALID_SELECTOR"
	// ReasonInvalidPage: page_size out of range, or a page_token this server
	// did not issue for this query.
	ReasonInvalidPage Why = "INVALID_PAGE"
	// ReasonInvalidPath: a path that is empty, too long, has a NUL or a ..
	// component, a name over 255 bytes, or loops through symbolic links.
	ReasonInvalidPath Why = "INVALID_PATH"
	// ReasonIsADirectory: a file call that needs a file names a directory.
	ReasonIsADirectory Why = "IS_A_DIRECTORY"
	// ReasonNotADirectory: a call that needs a directory (list, a parent, a
	// working_dir) names something else.
	ReasonNotADirectory Why = "NOT_A_DIRECTORY"
	// ReasonInvalidCommand: argv and shell both or neither, an empty
	// program, a NUL, an argument too long, or arguments and environment
	// beyond what the kernel accepts.
	ReasonInvalidCommand Why = "INVALID_COMMAND"
	// ReasonInvalidValue: a number or mode out of its range (replicas,
	// max_output_bytes, offset, length, mode).
	ReasonInvalidValue Why = "INVALID_VALUE"
	// ReasonInvalidStream: a stream whose messages come in the wrong order
	// (an exec's start, a write's header, first and only first).
	ReasonInvalidStream Why = "INVALID_STREAM"
	// ReasonInvalidCode: RunCode's code is larger than 1 MiB or not UTF-8,
	// or its language is not one the sandbox runs ("python").
	ReasonInvalidCode Why = "INVALID_CODE"
	// ReasonInvalidContextID: a code context id that is not a DNS-1123 label.
	ReasonInvalidContextID Why = "INVALID_CONTEXT_ID"
	// ReasonInvalidPort: a port outside 1..65535, one of the agent's own,
	// or an unknown protocol (ExposePort).
	ReasonInvalidPort Why = "INVALID_PORT"
	// ReasonInvalidTerminal: a terminal size outside 1..1000 or a bad TERM
	// (a resize of an exec without a terminal is NO_TERMINAL).
	ReasonInvalidTerminal Why = "INVALID_TERMINAL"
	// ReasonInvalidForkSource: ForkSandbox names neither a snapshot nor a
	// sandbox to fork from, or both.
	ReasonInvalidForkSource Why = "INVALID_FORK_SOURCE"
	// ReasonInvalidBody: HTTP: a request body that cannot be read or is not
	// the JSON its route takes.
	ReasonInvalidBody Why = "INVALID_BODY"
	// ReasonInvalidQuery: HTTP: a query parameter that is not a field of
	// the request or does not parse as its type.
	ReasonInvalidQuery Why = "INVALID_QUERY"
	// ReasonRequestIDReused: a request_id first used by the other method
	// (create vs claim).
	ReasonRequestIDReused Why = "REQUEST_ID_REUSED"
)

// Reasons of things that do not exist (NOT_FOUND) or already do (ALREADY_EXISTS).
const (
	// ReasonSandboxNotFound: the sandbox the call names does not exist
	// (never did, was deleted, or is being deleted), or the one a create or
	// claim waited for was deleted meanwhile. Only answers about the
	// sandbox itself carry it: a missing template, pool, file or program
	// does not.
	ReasonSandboxNotFound Why = "SANDBOX_NOT_FOUND"
	// ReasonFileNotFound: a path a file call names (or a parent of it)
	// does not exist in the sandbox, which does.
	ReasonFileNotFound Why = "FILE_NOT_FOUND"
	// ReasonTemplateNotFound: the template a create or claim names does not exist.
	ReasonTemplateNotFound Why = "TEMPLATE_NOT_FOUND"
	// ReasonPoolNotFound: the warm pool the call names does not exist.
	ReasonPoolNotFound Why = "POOL_NOT_FOUND"
	// ReasonRequestIDSandboxDeleted: the sandbox a request_id made has been
	// deleted since; a new id makes a new one.
	ReasonRequestIDSandboxDeleted Why = "REQUEST_ID_SANDBOX_DELETED"
	// ReasonSandboxExists: a sandbox of that name exists already (locally
	// also: its directory, left by a restore from an older backup).
	ReasonSandboxExists Why = "SANDBOX_EXISTS"
	// ReasonFileExists: a file or directory exists at the path already.
	ReasonFileExists Why = "FILE_EXISTS"
)

// Reasons of a sandbox whose state refuses the call (FAILED_PRECONDITION),
// is passing (UNAVAILABLE: retry) or did not come in time (DEADLINE_EXCEEDED).
const (
	// ReasonSandboxSuspended: the sandbox is suspended and its template
	// does not auto-resume: resume it first.
	ReasonSandboxSuspended Why = "SANDBOX_SUSPENDED"
	// ReasonSandboxExpired: the sandbox has passed its shutdown time and is
	// retained stopped: extend (and resume) it first.
	ReasonSandboxExpired Why = "SANDBOX_EXPIRED"
	// ReasonSandboxFailed: the sandbox has failed (resume restarts it).
	ReasonSandboxFailed Why = "SANDBOX_FAILED"
	// ReasonSandboxStartFailed: the sandbox a create or claim waited for
	// failed to start (UNAVAILABLE).
	ReasonSandboxStartFailed Why = "SANDBOX_START_FAILED"
	// ReasonSandboxNotRunning: the sandbox is between states (starting,
	// stopping, its agent restarting): retry (UNAVAILABLE).
	ReasonSandboxNotRunning Why = "SANDBOX_NOT_RUNNING"
	// ReasonSandboxNotReady: the sandbox was not ready by the call's
	// deadline; it keeps starting (DEADLINE_EXCEEDED).
	ReasonSandboxNotReady Why = "SANDBOX_NOT_READY"
	// ReasonSandboxReplaced: the sandbox was deleted and made again under
	// its name while the call waited (ExposePort's wait for its port)
	// (FAILED_PRECONDITION): call again for the new one.
	ReasonSandboxReplaced Why = "SANDBOX_REPLACED"
	// ReasonWorkingDirNotFound: an exec's working_dir does not exist in the
	// sandbox (FAILED_PRECONDITION).
	ReasonWorkingDirNotFound Why = "WORKING_DIR_NOT_FOUND"
	// ReasonDirectoryNotEmpty: remove of a non-empty directory without
	// recursive (FAILED_PRECONDITION).
	ReasonDirectoryNotEmpty Why = "DIRECTORY_NOT_EMPTY"
	// ReasonNotARegularFile: a file call names a fifo, a socket or a device
	// (or a link to one), which the files API never opens
	// (FAILED_PRECONDITION).
	ReasonNotARegularFile Why = "NOT_A_REGULAR_FILE"
	// ReasonExecStartFailed: the program could not be started for another
	// reason than not being found (FAILED_PRECONDITION).
	ReasonExecStartFailed Why = "EXEC_START_FAILED"
	// ReasonAgentUnreachable: the sandbox's agent could not be reached; the
	// call was not retried (UNAVAILABLE).
	ReasonAgentUnreachable Why = "AGENT_UNREACHABLE"
	// ReasonAgentNotAnswering: the agent sent nothing before the call's
	// deadline; it may be hung (DEADLINE_EXCEEDED).
	ReasonAgentNotAnswering Why = "AGENT_NOT_ANSWERING"
	// ReasonAgentSecretNotReady: the sandbox's agent Secret does not exist
	// yet or is empty, on Kubernetes (UNAVAILABLE).
	ReasonAgentSecretNotReady Why = "AGENT_SECRET_NOT_READY"
	// ReasonAgentSecretUntrusted: the agent Secret is not controlled by the
	// sandbox, or its certificate does not parse: the bridge will not use
	// it (FAILED_PRECONDITION).
	ReasonAgentSecretUntrusted Why = "AGENT_SECRET_UNTRUSTED"
	// ReasonAgentLegacyPod: the sandbox's pod was made by an earlier
	// controller (per-sandbox agent Secret, no client certificates) and the
	// bridge runs without --legacy-agent-secrets (FAILED_PRECONDITION).
	ReasonAgentLegacyPod Why = "AGENT_LEGACY_POD"
	// ReasonAgentCANotReady: the bridge could not read the agents' bridge
	// CA (Secret sandpod-agent-ca in the controller's namespace, made by the
	// controller at start), so it cannot reach agents yet (UNAVAILABLE).
	ReasonAgentCANotReady Why = "AGENT_CA_NOT_READY"
	// ReasonAgentNotAuthenticated: what answered at the sandbox's pod
	// address did not prove it is the sandbox's pod (no identity token in
	// its certificate, a token of another pod, or the token review failed),
	// so the bridge sent it nothing (UNAVAILABLE).
	ReasonAgentNotAuthenticated Why = "AGENT_NOT_AUTHENTICATED"
	// ReasonCallDeadlineExceeded: the call's deadline passed while the
	// agent was still working (DEADLINE_EXCEEDED).
	ReasonCallDeadlineExceeded Why = "CALL_DEADLINE_EXCEEDED"
	// ReasonCallCanceled: the caller canceled the call (CANCELLED).
	ReasonCallCanceled Why = "CALL_CANCELED"
	// ReasonWatchFellBehind: a watch could not keep up; list and watch
	// again (ABORTED).
	ReasonWatchFellBehind Why = "WATCH_FELL_BEHIND"
)

// Reasons of limits (RESOURCE_EXHAUSTED, or the code of who set the limit).
const (
	// ReasonQuotaExceeded: a Kubernetes ResourceQuota of the namespace
	// refused to make the sandbox's objects (PERMISSION_DENIED, the API
	// server's Forbidden).
	ReasonQuotaExceeded Why = "QUOTA_EXCEEDED"
	// ReasonSandboxQuotaExceeded: a SandboxQuota's maxSandboxes would be
	// passed (RESOURCE_EXHAUSTED; metadata quota, limit, max, used).
	ReasonSandboxQuotaExceeded Why = "SANDBOX_QUOTA_EXCEEDED"
	// ReasonClaimRateExceeded: a SandboxQuota's maxClaimsPerMinute would be
	// passed (RESOURCE_EXHAUSTED; metadata also retry_after).
	ReasonClaimRateExceeded Why = "CLAIM_RATE_EXCEEDED"
	// ReasonPoolLimitExceeded: replicas above the local engine's limit.
	ReasonPoolLimitExceeded Why = "POOL_LIMIT_EXCEEDED"
	// ReasonNoLease: RenewLease of a sandbox that has no lease
	// (FAILED_PRECONDITION).
	ReasonNoLease Why = "NO_LEASE"
	// ReasonTooManyInitialEvents: a watch with initial events matches more
	// sandboxes than one answer holds: narrow the selector.
	ReasonTooManyInitialEvents Why = "TOO_MANY_INITIAL_EVENTS"
	// ReasonSandboxDiskFull: no space left in the sandbox.
	ReasonSandboxDiskFull Why = "SANDBOX_DISK_FULL"
	// ReasonSandboxProcessLimit: the sandbox's process limit is reached.
	ReasonSandboxProcessLimit Why = "SANDBOX_PROCESS_LIMIT"
	// ReasonStreamLimit: the caller (its token; callers without one
	// together) already holds the server's most open streams
	// (RESOURCE_EXHAUSTED; metadata limit).
	ReasonStreamLimit Why = "STREAM_LIMIT"
)

// Reasons of who may call (UNAUTHENTICATED, PERMISSION_DENIED).
const (
	// ReasonInvalidToken: no bearer token, or one the server does not know
	// (UNAUTHENTICATED).
	ReasonInvalidToken Why = "INVALID_TOKEN"
	// ReasonAgentSecretMismatch: a call to an agent without its sandbox's
	// secret (UNAUTHENTICATED; only callers that bypass the bridge see it).
	ReasonAgentSecretMismatch Why = "AGENT_SECRET_MISMATCH"
	// ReasonNamespaceForbidden: the token may not use this namespace (its
	// namespace list, or Kubernetes RBAC) (PERMISSION_DENIED).
	ReasonNamespaceForbidden Why = "NAMESPACE_FORBIDDEN"
	// ReasonPathOutsideSandbox: a path leads outside the sandbox through a
	// symbolic link (PERMISSION_DENIED).
	ReasonPathOutsideSandbox Why = "PATH_OUTSIDE_SANDBOX"
	// ReasonReadOnlyFileSystem: a write to a read-only tree (PERMISSION_DENIED).
	ReasonReadOnlyFileSystem Why = "READ_ONLY_FILE_SYSTEM"
	// ReasonFilePermissionDenied: the file system refused the access
	// (PERMISSION_DENIED).
	ReasonFilePermissionDenied Why = "FILE_PERMISSION_DENIED"
)

// Reasons of the server's own failures (UNAVAILABLE: retry; INTERNAL).
const (
	// ReasonStoreUnavailable: the local engine could not save its state;
	// nothing was changed (UNAVAILABLE).
	ReasonStoreUnavailable Why = "STORE_UNAVAILABLE"
	// ReasonKubernetesAPIError: the Kubernetes API server refused or failed
	// a read or write the bridge made; the metadata's kubernetes_reason is
	// its own reason (Conflict, Forbidden, ...), the code follows it.
	ReasonKubernetesAPIError Why = "KUBERNETES_API_ERROR"
	// ReasonAuthUnavailable: a TokenReview or SubjectAccessReview could not
	// be made (UNAVAILABLE).
	ReasonAuthUnavailable Why = "AUTH_UNAVAILABLE"
	// ReasonSandboxDeleteFailed: the local engine could not remove a
	// sandbox's container or files (INTERNAL).
	ReasonSandboxDeleteFailed Why = "SANDBOX_DELETE_FAILED"
	// ReasonFileOperationFailed: a file operation failed with an error the
	// agent has no better answer for (INTERNAL; the message has it).
	ReasonFileOperationFailed Why = "FILE_OPERATION_FAILED"
	// ReasonExecPipeFailed: the agent could not make the pipes of an exec
	// or a code context (INTERNAL).
	ReasonExecPipeFailed Why = "EXEC_PIPE_FAILED"
)

// ReasonUnclaimedPoolMember: a call other than get or delete to a warm pool
// member no claim has adopted (FAILED_PRECONDITION); lifecycle.MayReach
// decides, core/api/protoconv.Refusal answers.
const ReasonUnclaimedPoolMember Why = "UNCLAIMED_POOL_MEMBER"

// Reasons of a paused sandbox and of code contexts.
const (
	// ReasonSandboxPaused: an exec, file or code call on a paused sandbox
	// (whose template does not auto-resume): resume it, then retry
	// (FAILED_PRECONDITION).
	ReasonSandboxPaused Why = "SANDBOX_PAUSED"
	// ReasonSandboxInTransition: a pause (or a port exposure) of a sandbox
	// that is starting, stopping or being deleted (FAILED_PRECONDITION):
	// retry once it runs.
	ReasonSandboxInTransition Why = "SANDBOX_IN_TRANSITION"
	// ReasonFreezeFailed: the sandbox's processes could not be frozen
	// (pause; they were continued) or thawed (resume; they are restarted)
	// (INTERNAL); or there is no freezer: a pause on a local server run
	// with --no-limits (FAILED_PRECONDITION).
	ReasonFreezeFailed Why = "FREEZE_FAILED"
	// ReasonCodeContextNotFound: the code context a call names does not
	// exist (never did, was deleted, or died) (NOT_FOUND).
	ReasonCodeContextNotFound Why = "CODE_CONTEXT_NOT_FOUND"
	// ReasonCodeContextLimit: the sandbox already has its most code
	// contexts (RESOURCE_EXHAUSTED).
	ReasonCodeContextLimit Why = "CODE_CONTEXT_LIMIT"
	// ReasonCodeContextExists: CreateCodeContext with an id in use
	// (ALREADY_EXISTS).
	ReasonCodeContextExists Why = "CODE_CONTEXT_EXISTS"
	// ReasonInterpreterNotFound: the sandbox's image has no python3 on its
	// PATH, which code contexts need (FAILED_PRECONDITION).
	ReasonInterpreterNotFound Why = "INTERPRETER_NOT_FOUND"
	// ReasonCodeContextStartFailed: the interpreter of a code context could
	// not be started, or exited before it was ready; the message has its
	// output (FAILED_PRECONDITION).
	ReasonCodeContextStartFailed Why = "CODE_CONTEXT_START_FAILED"
	// ReasonCodeContextNotReady: the code context was not ready in time, or
	// a concurrent call starting the default context failed (UNAVAILABLE:
	// retry).
	ReasonCodeContextNotReady Why = "CODE_CONTEXT_NOT_READY"
	// ReasonCodeContextBroken: the code context stopped taking code and was
	// killed (UNAVAILABLE): create a new one.
	ReasonCodeContextBroken Why = "CODE_CONTEXT_BROKEN"
)

// Reasons of terminals and file watches.
const (
	// ReasonNoTerminal: a resize of an exec started without a terminal
	// (FAILED_PRECONDITION; the command is killed).
	ReasonNoTerminal Why = "NO_TERMINAL"
	// ReasonTerminalUnavailable: the sandbox could not give the exec a
	// terminal (FAILED_PRECONDITION).
	ReasonTerminalUnavailable Why = "TERMINAL_UNAVAILABLE"
	// ReasonTerminalResizeFailed: the kernel refused a terminal's new size
	// (INTERNAL).
	ReasonTerminalResizeFailed Why = "TERMINAL_RESIZE_FAILED"
	// ReasonWatchLimit: a file watch over a limit: of watches open in the
	// sandbox, of directories in one watch or in all, or the kernel's
	// inotify limits (RESOURCE_EXHAUSTED; the message says which).
	ReasonWatchLimit Why = "WATCH_LIMIT"
	// ReasonWatchFailed: the agent could not read a watch's events (INTERNAL).
	ReasonWatchFailed Why = "WATCH_FAILED"
)

// Reasons of port previews.
const (
	// ReasonPreviewsDisabled: the server was started without
	// --preview-listen (UNIMPLEMENTED).
	ReasonPreviewsDisabled Why = "PREVIEWS_DISABLED"
	// ReasonPortAlreadyExposed: ExposePort of a port exposed already; the
	// message has its URL (ALREADY_EXISTS).
	ReasonPortAlreadyExposed Why = "PORT_ALREADY_EXPOSED"
	// ReasonPortNotExposed: UnexposePort of a port that is not exposed (NOT_FOUND).
	ReasonPortNotExposed Why = "PORT_NOT_EXPOSED"
	// ReasonExposedPortLimit: the sandbox already exposes its most ports
	// (RESOURCE_EXHAUSTED).
	ReasonExposedPortLimit Why = "EXPOSED_PORT_LIMIT"
	// ReasonPreviewConnectionLimit: the sandbox already carries its most
	// preview connections (RESOURCE_EXHAUSTED).
	ReasonPreviewConnectionLimit Why = "PREVIEW_CONNECTION_LIMIT"
	// ReasonPortClosed: nothing listens on the port in the sandbox
	// (connection refused) (FAILED_PRECONDITION).
	ReasonPortClosed Why = "PORT_CLOSED"
	// ReasonPortNotAnswering: nothing answered on the port before the
	// call's deadline (DEADLINE_EXCEEDED): start the server first.
	ReasonPortNotAnswering Why = "PORT_NOT_ANSWERING"
	// ReasonPortUnreachable: the port could not be reached for another
	// reason than nothing listening (UNAVAILABLE).
	ReasonPortUnreachable Why = "PORT_UNREACHABLE"
)

// Reasons of the HTTP/JSON API's own refusals (bridge/httpapi).
const (
	// ReasonRequestTooLarge: a request body over the limit of its route
	// (RESOURCE_EXHAUSTED, HTTP 413).
	ReasonRequestTooLarge Why = "REQUEST_TOO_LARGE"
	// ReasonRouteNotFound: no route has that path (NOT_FOUND, 404) or
	// method (UNIMPLEMENTED, 405).
	ReasonRouteNotFound Why = "ROUTE_NOT_FOUND"
	// ReasonHostNotAllowed: a server without tokens answers only requests
	// whose Host is an IP address or localhost (PERMISSION_DENIED, 403).
	ReasonHostNotAllowed Why = "HOST_NOT_ALLOWED"
	// ReasonOriginNotAllowed: a browser request from an origin not in
	// --http-allow-origin (PERMISSION_DENIED, 403).
	ReasonOriginNotAllowed Why = "ORIGIN_NOT_ALLOWED"
	// ReasonUploadInterrupted: an upload's body could not be read to its
	// end (the caller went away); the old file stays (CANCELLED).
	ReasonUploadInterrupted Why = "UPLOAD_INTERRUPTED"
	// ReasonResponseEncodeFailed: an answer could not be encoded as JSON
	// (INTERNAL).
	ReasonResponseEncodeFailed Why = "RESPONSE_ENCODE_FAILED"
)

// Reasons of snapshots.
const (
	// ReasonSnapshotNotFound: the snapshot the call names does not exist
	// (NOT_FOUND).
	ReasonSnapshotNotFound Why = "SNAPSHOT_NOT_FOUND"
	// ReasonSnapshotInUse: the snapshot cannot be deleted while sandboxes
	// or warm pools use it; metadata "users" lists them (FAILED_PRECONDITION).
	ReasonSnapshotInUse Why = "SNAPSHOT_IN_USE"
	// ReasonSnapshotQuota: the namespace holds as many snapshots (or
	// bytes of them) as the backend allows (RESOURCE_EXHAUSTED).
	ReasonSnapshotQuota Why = "SNAPSHOT_QUOTA_EXCEEDED"
	// ReasonSnapshotExists: SnapshotSandbox with a name in use (ALREADY_EXISTS).
	ReasonSnapshotExists Why = "SNAPSHOT_EXISTS"
	// ReasonSnapshotNotReady: a snapshot that failed or is still being
	// taken cannot be forked or restored from (FAILED_PRECONDITION).
	ReasonSnapshotNotReady Why = "SNAPSHOT_NOT_READY"
	// ReasonSnapshotCopyFailed: copying a workspace into a snapshot, or a
	// snapshot back into a workspace, failed on the host (INTERNAL).
	ReasonSnapshotCopyFailed Why = "SNAPSHOT_COPY_FAILED"
	// ReasonMemorySnapshotUnsupported: include_memory on an engine that
	// snapshots files only (UNIMPLEMENTED).
	ReasonMemorySnapshotUnsupported Why = "MEMORY_SNAPSHOT_UNSUPPORTED"
	// ReasonSandboxHasNoVolumes: a snapshot or restore on Kubernetes of a
	// sandbox without volumes (volumeClaimTemplates), or with none of the
	// snapshot's: a Kubernetes snapshot holds volumes (FAILED_PRECONDITION).
	ReasonSandboxHasNoVolumes Why = "SANDBOX_HAS_NO_VOLUMES"
)
