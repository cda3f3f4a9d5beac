// Package sandpod is the Go client of sandpod, a sandbox service for AI
// agents: each sandbox is one durable, isolated workload with a stable
// name, handed out in milliseconds from warm pools, with exec, files,
// suspend, resume and a scheduled end.
//
// Dial a server (`sandpod serve` on a laptop or CI box, the bridge on
// Kubernetes), claim a sandbox from a template, run commands and move
// files:
//
//	client, err := sandpod.Dial(ctx, "127.0.0.1:50051", sandpod.WithToken(token))
//	if err != nil { ... }
//	defer client.Close()
//
//	sb, err := client.Claim(ctx, "python", sandpod.WithTTL(30*time.Minute))
//	if err != nil { ... }
//	defer sb.Delete(context.WithoutCancel(ctx))
//
//	res, err := sb.Run(ctx, "python3 -c 'print(6*7)'")
//	fmt.Print(string(res.Stdout)) // 42
//
// # Contexts, retries and idempotency
//
// Every call takes a context first and ends with it. Calls that are safe to
// repeat (reads, lifecycle changes, and Claim and Create thanks to a
// request id generated once per call and sent on every attempt) are
// retried on Unavailable and Aborted (and Claim and Create also on
// ResourceExhausted, the server's back-pressure) with an exponential,
// jittered backoff (see RetryPolicy). A ResourceExhausted from any other
// call, such as a file call that hit a sandbox's limits, is returned at
// once. Exec and file writes are never replayed: a command runs at most
// once per call. Retries are for a server that restarts under a client
// that was connected: until the client has reached its server once, a
// call waits at most WithConnectTimeout (3s) for the connection and then
// fails with ErrUnavailable naming the address.
//
// # Errors
//
// Calls return an *Error that wraps the gRPC status and matches one
// sentinel with errors.Is (ErrSandboxNotFound, ErrTimeout,
// ErrInvalidArgument, ...); status.FromError still works on it.
// ErrSandboxNotFound means the sandbox is gone and nothing else: a missing
// file is ErrFileNotFound, a program that is not found a Result with exit
// code 127, as in a shell. Run and Wait with WithCheck
// return a *CommandError when the command fails.
//
// # Handles
//
// A *Sandbox is a cheap handle (name, namespace, last known Info). It
// never owns the sandbox: drop it freely, reconnect with Client.Sandbox or
// Client.Get by name, and Delete explicitly (or let the shutdown time do
// it).
package sandpod
