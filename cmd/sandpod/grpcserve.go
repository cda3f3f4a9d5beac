package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --pprof
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sandpod/sandpod/bridge"
)

// serverFlags are the flags of the gRPC API shared by `serve` (local engine)
// and `bridge` (Kubernetes): where it listens, who may call it, TLS, pprof.
type serverFlags struct {
	listen, addrFile, tokenFile string
	tlsCert, tlsKey, pprof      string
	metrics                     string
	limits                      limitFlags
	preview                     previewFlags
	http                        httpFlags
	e2b                         e2bFlags
	tlsConfig                   *tls.Config // from --tls-cert, for the HTTP API too
}

func (f *serverFlags) register(fs *flag.FlagSet, defaultListen string) {
	fs.StringVar(&f.listen, "listen", defaultListen, "address of the gRPC API")
	fs.StringVar(&f.addrFile, "address-file", "", "write the address actually listened on to this file (useful with --listen 127.0.0.1:0)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file of bearer tokens callers must present: one a line, optionally followed by the namespaces it may use (TOKEN ns1,ns2); changes are picked up")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS with this certificate (PEM); reloaded when the file changes")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&f.pprof, "pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060)")
	fs.StringVar(&f.metrics, "metrics-listen", "", "serve Prometheus metrics at /metrics on this address (e.g. 127.0.0.1:9090; docs/install.md#metrics); off when empty")
	f.limits.register(fs)
	f.preview.register(fs)
	f.http.register(fs)
	f.e2b.register(fs)
}

func (f *serverFlags) check() error {
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("give both --tls-cert and --tls-key")
	}
	if f.limits.streamsPerCaller < 0 || f.limits.connsPerListener < 0 {
		return errors.New("--max-streams-per-caller and --max-connections take a count, 0 for no limit")
	}
	return nil
}

// bridgeOptions reads the token file and the TLS pair.
func (f *serverFlags) bridgeOptions() (bridge.Options, error) {
	bo := f.limits.options()
	if f.tokenFile != "" {
		tf, err := bridge.NewTokenFile(f.tokenFile)
		if err != nil {
			return bo, err
		}
		bo.Authenticators = append(bo.Authenticators, tf)
	}
	if f.tlsCert != "" {
		certs, err := bridge.NewCertReloader(f.tlsCert, f.tlsKey)
		if err != nil {
			return bo, err
		}
		bo.ServerOptions = append(bo.ServerOptions, grpc.Creds(credentials.NewTLS(certs.TLSConfig())))
		f.tlsConfig = certs.TLSConfig()
	}
	return bo, nil
}

// serveGRPC serves b until ctx ends, then stops gracefully (long execs and
// watches are cut after 5s; sandboxes keep running).
func serveGRPC(ctx context.Context, log *slog.Logger, b *bridge.Server, bo bridge.Options, f serverFlags) error {
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	lis = bridge.LimitListener(lis, bo.ConnsPerListener)
	g, hs := b.GRPCServer(bo)
	if err := servePreviews(ctx, log, b, bo, f.preview); err != nil {
		lis.Close()
		return err
	}
	// Before the address file: a caller that reads it can scrape.
	stopMetrics, err := serveMetrics(log, f.metrics)
	if err != nil {
		_ = lis.Close()
		return err
	}
	defer stopMetrics()
	if f.addrFile != "" {
		tmp := f.addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(lis.Addr().String()), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, f.addrFile); err != nil {
			return err
		}
	}
	stopHTTP, err := serveHTTP(ctx, log, b, bo, f)
	if err != nil {
		_ = lis.Close()
		return err
	}
	defer stopHTTP()
	stopE2B, err := serveE2B(ctx, log, b, bo, f)
	if err != nil {
		_ = lis.Close()
		return err
	}
	defer stopE2B()
	if f.pprof != "" {
		go func() { log.Info("pprof", "err", http.ListenAndServe(f.pprof, nil)) }()
	}
	go func() {
		<-ctx.Done()
		hs.Shutdown()
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			g.Stop()
		}
	}()
	log.Info("sandpod API listening", "address", lis.Addr().String(), "tls", f.tlsCert != "", "authenticators", len(bo.Authenticators))
	return g.Serve(lis)
}

// serveMetrics serves the API's Prometheus metrics on addr, when set, in
// plain HTTP with no token: they carry counts, durations and template and
// pool names, nothing of a sandbox or a caller; keep addr off the public
// network as for --pprof. It is listening when serveMetrics returns.
func serveMetrics(log *slog.Logger, addr string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", bridge.MetricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics", "err", err)
		}
	}()
	log.Info("sandpod metrics listening", "address", lis.Addr().String(), "path", "/metrics")
	return func() { _ = srv.Close() }, nil
}
