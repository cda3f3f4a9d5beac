// Package agentconn is how the bridge and the local engine reach a
// sandbox's agent: where it listens (Endpoint), how the secret is sent
// (SecretMetadataKey), and the pinned per-sandbox TLS of Kubernetes pods
// made by earlier controllers (ClientTLS; their Secret holds the
// certificate). Pods of this controller use core/agenttls instead.
// The agent itself, the server inside the sandbox, is core/agent.
package agentconn

import "crypto/tls"

// SecretMetadataKey is the gRPC metadata key that carries the sandbox secret.
const SecretMetadataKey = "sandpod-agent-secret"

// Endpoint is where a sandbox's agent listens and the secret it expects.
type Endpoint struct {
	// Target is a gRPC target: "unix:///path" or "host:port".
	Target string
	Secret string
	// TLS, when set, is how to reach the agent over TLS (Kubernetes: its
	// pinned certificate); nil means plaintext (a local unix socket).
	TLS *tls.Config
	// Env is added to every exec (a claim's env); the request's env wins.
	Env map[string]string
	// Done, if set, is called when the call that asked for the endpoint
	// ends, so the backend knows the sandbox is busy until then.
	Done func()
}
