package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/e2b"
)

// e2bFlags are the flags of the E2B-compatible API (docs/e2b.md), shared
// by `serve` and `bridge`.
type e2bFlags struct {
	listen, namespace, template string
}

func (f *e2bFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "e2b-listen", "", "also serve an E2B-compatible API on this address (e.g. 127.0.0.1:50054): point E2B's SDK at it with E2B_API_URL and E2B_SANDBOX_URL (docs/e2b.md); same tokens (as E2B API keys) and TLS; off when empty")
	fs.StringVar(&f.namespace, "e2b-namespace", "default", "the namespace of the sandboxes made and seen through the E2B API")
	fs.StringVar(&f.template, "e2b-default-template", "python", "the sandpod template E2B's default template names (base, code-interpreter-v1) stand for")
}

// serveE2B starts the E2B-compatible API when --e2b-listen is set: like the
// HTTP API, it calls b through an in-process gRPC connection, so that it
// passes the same authentication and validation as a gRPC caller.
func serveE2B(ctx context.Context, log *slog.Logger, b *bridge.Server, bo bridge.Options, f serverFlags) (stop func(), err error) {
	if f.e2b.listen == "" {
		return func() {}, nil
	}
	conn, stopConn, err := b.InProcess(bo)
	if err != nil {
		return nil, err
	}
	api := e2b.New(conn, e2b.Options{
		Namespace: f.e2b.namespace, DefaultTemplate: f.e2b.template,
		Open: len(bo.Authenticators) == 0, MaxUploadBytes: f.http.maxUpload,
		Streams: bo.Streams.ForTokens(bo.Authenticators),
	})
	stopSrv, err := serveHandler(ctx, log, f.e2b.listen, bo.ConnsPerListener, api, f.tlsConfig, "sandpod E2B API listening")
	if err != nil {
		stopConn()
		return nil, err
	}
	return func() { stopSrv(); stopConn() }, nil
}
