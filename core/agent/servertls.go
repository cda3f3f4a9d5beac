package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/sandpod/sandpod/core/agentconn"
)

// ServerTLS is the agent's server config for a certificate and key in PEM files.
func ServerTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, nil
}

// PinnedTLS is the agent's server config in the bridge-CA mode: a serving
// certificate made in memory only (nothing on disk for the sandbox's code
// to read, and nothing anyone pins), and agentconn.ServerConfig's checks of
// every caller against pin and the identity of sandboxUID. With tokenFile
// (the kubelet's projected identity token) and caKey (the bridge CA's
// public key, agentconn.PublicKey), the certificate carries the token sealed
// to the CA, and is made anew when the kubelet rotates the token: how the
// bridge authenticates this agent (agentconn.AgentCheck). Without them the
// bridge refuses this agent; tests only.
func PinnedTLS(pin, caKey, sandboxUID, tokenFile string) (*tls.Config, error) {
	if sandboxUID == "" {
		return nil, errors.New("agent TLS: --bridge-ca-sha256 needs --sandbox-uid")
	}
	id := agentconn.Identity(sandboxUID)
	if !agentconn.ValidIdentity(id) {
		return nil, fmt.Errorf("agent TLS: --sandbox-uid %q makes no DNS label", sandboxUID)
	}
	if !agentconn.ValidPin(pin) {
		return nil, fmt.Errorf("agent TLS: bridge CA pin %q: want 64 lowercase hex digits (SHA-256)", pin)
	}
	if tokenFile == "" {
		cert, err := agentconn.NewServing(id, time.Now())
		if err != nil {
			return nil, fmt.Errorf("agent TLS: %w", err)
		}
		return agentconn.ServerConfig(cert, id, pin, time.Now)
	}
	spki, err := agentconn.ParsePublicKey(caKey, pin)
	if err != nil {
		return nil, fmt.Errorf("agent TLS: --bridge-ca-key: %w", err)
	}
	certs, err := agentconn.NewServingCerts(id, spki, tokenFile, time.Now)
	if err != nil {
		return nil, err
	}
	return agentconn.ServerConfigFunc(certs.Get, id, pin, time.Now)
}
