package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sandpod/sandpod/bridge"
)

// previewFlags configure the port-preview listener of `serve` and
// `bridge`: a listener of its own, so previews are another origin than
// the API.
type previewFlags struct {
	listen, url, keyFile, addrFile string
	// statePath keeps exposures across restarts (serve: in its state dir).
	statePath string
}

func (f *previewFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "preview-listen", "", "serve port previews (ExposePort) on this address, e.g. 127.0.0.1:50053; off when empty")
	fs.StringVar(&f.url, "preview-url", "", `preview URL template, "*" standing for the p<port>-<id> host label (default http://*.preview.localhost:PORT, PORT of --preview-listen; *.localhost resolves to loopback in browsers and curl)`)
	fs.StringVar(&f.keyFile, "preview-key-file", "", "file of the key that signs preview URLs (made, 0600, when missing; serve: STATE_DIR/preview.key; bridge: mount it from a Secret, else a key per process and links die with it)")
	fs.StringVar(&f.addrFile, "preview-address-file", "", "write the preview address actually listened on to this file")
}

// previewKey reads the signing key, making it when the file is missing.
func previewKey(path string) ([]byte, error) {
	if path == "" {
		k := make([]byte, 32)
		_, err := rand.Read(k)
		return k, err
	}
	if b, err := os.ReadFile(path); err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("%s: a preview key needs at least 32 bytes, it has %d", path, len(b))
		}
		return b, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, k, 0o600); err != nil {
		// A read-only mount of an absent optional Secret (the bridge): a
		// key of this process only, said in the log by the caller.
		return k, fmt.Errorf("%w: %v", errEphemeralKey, err)
	}
	return k, nil
}

// errEphemeralKey: the key could not be kept; links die with the process.
var errEphemeralKey = errors.New("the preview key could not be saved; signed preview URLs will not outlive this process")

// servePreviews starts the preview listener when asked; it stops with ctx.
func servePreviews(ctx context.Context, log *slog.Logger, b *bridge.Server, bo bridge.Options, f previewFlags) error {
	if f.listen == "" {
		return nil
	}
	key, err := previewKey(f.keyFile)
	if errors.Is(err, errEphemeralKey) {
		log.Warn(err.Error())
	} else if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--preview-listen: %w", err)
	}
	lis = bridge.LimitListener(lis, bo.ConnsPerListener)
	tmpl := f.url
	if tmpl == "" {
		_, port, _ := net.SplitHostPort(lis.Addr().String())
		tmpl = "http://*.preview.localhost:" + port
	}
	if !strings.Contains(tmpl, "*") {
		lis.Close()
		return fmt.Errorf("--preview-url %q: it needs a * where the host label goes", tmpl)
	}
	if err := b.EnablePreviews(bridge.PreviewOptions{URLTemplate: strings.TrimSuffix(tmpl, "/"), Key: key, StatePath: f.statePath}); err != nil {
		lis.Close()
		return err
	}
	if f.addrFile != "" {
		if err := os.WriteFile(f.addrFile+".tmp", []byte(lis.Addr().String()), 0o644); err != nil {
			return err
		}
		if err := os.Rename(f.addrFile+".tmp", f.addrFile); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: b.PreviewHandler(bo), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("preview listener", "err", err)
		}
	}()
	log.Info("sandpod previews listening", "address", lis.Addr().String(), "url", tmpl)
	return nil
}
