// Package agentconn is agent reachability, all of it: how the bridge and
// the local engine reach a sandbox's agent and how each side knows the
// other.
//
//   - Where an agent listens and how the secret is sent: Endpoint,
//     SecretMetadataKey (endpoint.go); one cached gRPC connection per
//     sandbox incarnation: Conns (dial.go).
//   - The agents' TLS on Kubernetes, with no per-sandbox credential: the
//     CA, its pin and the bridge's client certificates (certs.go), the
//     handshake checks of both sides (config.go), the agent's identity by
//     its pod's bound token (identity.go).
//   - The CA's Secret: made by the controller (kubeca.EnsureCA), read by
//     the bridge (kubeca.BridgeCA): the subpackage kubeca, which alone
//     needs a Kubernetes client.
//   - The pinned per-sandbox TLS of pods made by earlier controllers
//     (pinned.go, ClientTLS; their Secret holds the certificate).
//
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
