package bridge

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertReloader serves the bridge's TLS certificate from files and picks up a
// new one when they change (cert-manager or a renewal script rewrites them),
// without a restart. A broken pair on disk keeps the last good one in use.
type CertReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	certMod time.Time
	keyMod  time.Time
}

// NewCertReloader loads the pair once; an unreadable pair is an error.
func NewCertReloader(certFile, keyFile string) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// TLSConfig is a server config that asks the reloader on every handshake.
func (r *CertReloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}

// GetCertificate returns the current certificate, reloading it first when
// either file changed.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed() {
		if err := r.reloadLocked(); err != nil {
			slog.Warn("TLS certificate changed but does not load; keeping the previous one", "err", err)
		}
	}
	return r.cert, nil
}

func (r *CertReloader) changed() bool {
	c, err1 := os.Stat(r.certFile)
	k, err2 := os.Stat(r.keyFile)
	return err1 == nil && err2 == nil && (!c.ModTime().Equal(r.certMod) || !k.ModTime().Equal(r.keyMod))
}

func (r *CertReloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloadLocked()
}

func (r *CertReloader) reloadLocked() error {
	c, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	k, err := os.Stat(r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s / key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod = &cert, c.ModTime(), k.ModTime()
	return nil
}
