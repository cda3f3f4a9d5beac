package agent

import (
	"context"
	"flag"
	"fmt"
	"os"
)

// Command parses the agent's flags from args and runs it (Main): the one
// command line of `sandpod agent` and of the small cmd/sandpod-agent, so
// that the engine and the pods start either binary with the same arguments.
func Command(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.Sandbox, "sandbox", "", "name of the sandbox served")
	fs.StringVar(&o.Root, "root", "/workspace", "sandbox root: file paths are relative to it, commands start in it")
	fs.StringVar(&o.Listen, "listen", "tcp://0.0.0.0:7070", "tcp://HOST:PORT, unix:///PATH or fd://N")
	fs.StringVar(&o.SecretFile, "secret-file", "", "file holding the sandbox secret")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "serve TLS with this certificate (PEM)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&o.BridgeCAPin, "bridge-ca-sha256", "", "hex SHA-256 of the bridge CA's public key: serve TLS with a certificate made in memory and admit only the bridge's client certificates (Kubernetes); no secret")
	fs.StringVar(&o.BridgeCAKey, "bridge-ca-key", "", "the bridge CA's public key (base64 DER, of --bridge-ca-sha256): the identity token is sealed to it")
	fs.StringVar(&o.IdentityTokenFile, "identity-token-file", "", "the kubelet's projected service-account token (audience sandpod.dev/agent): carried, sealed, in the agent's certificate so that the bridge can authenticate the agent")
	fs.StringVar(&o.SandboxUID, "sandbox-uid", "", "the sandbox's UID, whose identity the agent answers to (with --bridge-ca-sha256)")
	fs.StringVar(&o.HealthListen, "health-listen", "", "also serve only gRPC health, without TLS, here (tcp://HOST:PORT): for a kubelet probe")
	fs.IntVar(&o.GateFD, "gate-fd", 0, "pipe delivering the secret once the engine is ready (local engine)")
	fs.IntVar(&o.RespawnFD, "respawn-fd", 0, "pipe on which the engine asks the init for a new agent (local engine: a restore in place)")
	fs.IntVar(&o.LifelineFD, "lifeline-fd", 0, "pipe the init holds for its life: the engine's helpers outside the sandbox end when it closes (local engine)")
	fs.StringVar(&o.RunAs, "run-as", "", "UID:GID that commands run as, when not the agent's own (local engine)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Command = fs.Args()
	if (o.TLSCert == "") != (o.TLSKey == "") {
		fmt.Fprintln(os.Stderr, "sandpod agent: give both --tls-cert and --tls-key")
		return 2
	}
	return Main(ctx, o)
}
