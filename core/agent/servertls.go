package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/sandpod/sandpod/core/agenttls"
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
// certificate made now, in memory only (nothing on disk for the sandbox's
// code to read, and nothing anyone pins), and agenttls.ServerConfig's
// checks of every caller against pin and the identity of sandboxUID.
func PinnedTLS(pin, sandboxUID string) (*tls.Config, error) {
	if sandboxUID == "" {
		return nil, errors.New("agent TLS: --bridge-ca-sha256 needs --sandbox-uid")
	}
	id := agenttls.Identity(sandboxUID)
	if !agenttls.ValidIdentity(id) {
		return nil, fmt.Errorf("agent TLS: --sandbox-uid %q makes no DNS label", sandboxUID)
	}
	cert, err := agenttls.NewServing(id, time.Now())
	if err != nil {
		return nil, fmt.Errorf("agent TLS: %w", err)
	}
	return agenttls.ServerConfig(cert, id, pin, time.Now)
}
