package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --pprof
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/core/engine"
)

//go:embed default-templates.yaml
var defaultTemplates []byte

var _ bridge.Backend = (*engine.Engine)(nil)

func init() {
	register("serve", "run the bridge on the embedded local engine (no cluster needed)", runServe)
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runServe(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:50051", "address of the gRPC API")
	stateDir := fs.String("state-dir", defaultStateDir(), "where sandboxes and the state store live")
	var configs stringList
	fs.Var(&configs, "config", "SandboxTemplate/SandboxWarmPool YAML file or directory (repeatable; default: a python template with a pool of 2)")
	addrFile := fs.String("address-file", "", "write the address actually listened on to this file (useful with --listen 127.0.0.1:0)")
	tokenFile := fs.String("token-file", "", "file of bearer tokens callers must present: one a line, optionally followed by the namespaces it may use (TOKEN ns1,ns2)")
	tlsCert := fs.String("tls-cert", "", "serve TLS with this certificate (PEM); reloaded when the file changes")
	tlsKey := fs.String("tls-key", "", "the private key (PEM) of --tls-cert")
	refillDelay := fs.Duration("pool-refill-delay", 0, "hold back a warm pool's refill this long after its last claim (smooths bursts)")
	pprof := fs.String("pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if (*tlsCert == "") != (*tlsKey == "") {
		log.Error("serve: give both --tls-cert and --tls-key")
		return 2
	}
	o := serveOptions{listen: *listen, stateDir: *stateDir, configs: configs, addrFile: *addrFile,
		tokenFile: *tokenFile, tlsCert: *tlsCert, tlsKey: *tlsKey, pprof: *pprof, refillDelay: *refillDelay}
	if err := serve(ctx, log, o); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

type serveOptions struct {
	listen, stateDir       string
	configs                []string
	addrFile, tokenFile    string
	tlsCert, tlsKey, pprof string
	refillDelay            time.Duration
}

func serve(ctx context.Context, log *slog.Logger, o serveOptions) error {
	defs, err := loadDefinitions(o.configs)
	if err != nil {
		return err
	}
	bo, err := bridgeOptions(o)
	if err != nil {
		return err
	}
	eng, err := engine.New(ctx, engine.Config{StateDir: o.stateDir, Definitions: defs, Logger: log, PoolRefillDelay: o.refillDelay})
	if err != nil {
		return err
	}
	defer eng.Close()
	eng.Start()

	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	b := bridge.New(eng)
	defer b.Close()
	g, hs := b.GRPCServer(bo)
	if o.addrFile != "" {
		tmp := o.addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(lis.Addr().String()), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, o.addrFile); err != nil {
			return err
		}
	}
	if o.pprof != "" {
		go func() { log.Info("pprof", "err", http.ListenAndServe(o.pprof, nil)) }()
	}
	go func() {
		<-ctx.Done()
		hs.Shutdown()
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			g.Stop() // long execs and watches end here; sandboxes keep running
		}
	}()
	log.Info("sandpod serving", "address", lis.Addr().String(), "state", o.stateDir, "templates", len(defs.Templates), "pools", len(defs.Pools))
	return g.Serve(lis)
}

// bridgeOptions reads the token file and the TLS pair.
func bridgeOptions(o serveOptions) (bridge.Options, error) {
	var bo bridge.Options
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return bo, fmt.Errorf("token file: %w", err)
		}
		if bo.Tokens, err = bridge.ParseTokens(string(b)); err != nil {
			return bo, err
		}
		if len(bo.Tokens) == 0 {
			return bo, fmt.Errorf("token file %s holds no token", o.tokenFile)
		}
	}
	if o.tlsCert != "" {
		certs, err := bridge.NewCertReloader(o.tlsCert, o.tlsKey)
		if err != nil {
			return bo, err
		}
		bo.ServerOptions = append(bo.ServerOptions, grpc.Creds(credentials.NewTLS(certs.TLSConfig())))
	}
	return bo, nil
}

func loadDefinitions(configs []string) (engine.Definitions, error) {
	if len(configs) > 0 {
		return engine.LoadDefinitions(configs...)
	}
	return engine.ParseDefinitions("built-in default templates", defaultTemplates)
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sandpod")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "sandpod")
	}
	return "sandpod-state"
}
