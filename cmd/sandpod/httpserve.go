package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/httpapi"
)

// httpFlags are the flags of the HTTP/JSON API (docs/http.md), shared by
// `serve` and `bridge`.
type httpFlags struct {
	listen    string
	maxUpload int64
	origins   stringList
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "http-listen", "", "also serve the API as HTTP/JSON on this address (e.g. 127.0.0.1:50052), with the same tokens and TLS; off when empty")
	fs.Int64Var(&f.maxUpload, "http-max-upload", httpapi.DefaultMaxUploadBytes, "largest HTTP upload (PUT .../files/content, the E2B API's POST /files, decompressed) or exec standard input, in bytes; larger is answered 413")
	fs.Var(&f.origins, "http-allow-origin", "a web origin (https://app.example.com, or *) whose pages may call the HTTP API, with CORS (repeatable; default: requests from web pages are refused)")
}

// serveHTTP starts the HTTP/JSON API when --http-listen is set: a gateway
// that calls b through an in-process gRPC connection, so that it passes the
// same authentication as a gRPC caller. It is listening when serveHTTP
// returns; stop shuts it down (streams are cut after 5s).
func serveHTTP(ctx context.Context, log *slog.Logger, b *bridge.Server, bo bridge.Options, f serverFlags) (stop func(), err error) {
	if f.http.listen == "" {
		return func() {}, nil
	}
	conn, stopConn, err := b.InProcess(bo)
	if err != nil {
		return nil, err
	}
	api, err := httpapi.New(ctx, conn, httpapi.Options{MaxUploadBytes: f.http.maxUpload,
		Open: len(bo.Authenticators) == 0, AllowedOrigins: f.http.origins})
	if err != nil {
		stopConn()
		return nil, err
	}
	stopSrv, err := serveHandler(ctx, log, f.http.listen, bo.ConnsPerListener, api, f.tlsConfig, "sandpod HTTP API listening", "openapi", "/openapi.json")
	if err != nil {
		stopConn()
		return nil, err
	}
	return func() { stopSrv(); stopConn() }, nil
}

// serveHandler serves h on addr (TLS with tlsConfig, when set) until ctx
// ends or stop is called; it is listening when serveHandler returns, and
// logs msg with the address and attrs. It holds at most maxConns
// connections at once (0: no cap).
func serveHandler(ctx context.Context, log *slog.Logger, addr string, maxConns int, h http.Handler, tlsConfig *tls.Config, msg string, attrs ...any) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	lis = bridge.LimitListener(lis, maxConns)
	// No read or write timeout: execs, watches and uploads last as long
	// as they need. Headers must come promptly, idle connections go.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: tlsConfig}
	go func() {
		var err error
		if tlsConfig != nil {
			err = srv.ServeTLS(lis, "", "")
		} else {
			err = srv.Serve(lis)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error(msg, "err", err)
		}
	}()
	log.Info(msg, append([]any{"address", lis.Addr().String(), "tls", tlsConfig != nil}, attrs...)...)
	// Shut down when ctx ends, alongside the gRPC server's graceful stop
	// (not after it: both get the same 5 s for their streams), or when
	// stop is called.
	var once sync.Once
	shutdown := func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close() // cuts the streams still open (watches, long execs)
			}
		})
	}
	go func() { <-ctx.Done(); shutdown() }()
	return shutdown, nil
}
