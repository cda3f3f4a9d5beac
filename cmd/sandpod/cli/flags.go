package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	sandpod "github.com/sandpod/sandpod/clients/go"
)

// globalFlags are the flags every user command takes.
type globalFlags struct {
	address, token, namespace, config, tlsCA string
	insecure                                 bool
	output                                   string
	progress                                 bool

	cmd *cobra.Command // the root, to ask which flags were given
}

func (g *globalFlags) register(root *cobra.Command) {
	g.cmd = root
	pf := root.PersistentFlags()
	pf.StringVar(&g.address, "address", "", "server address host:port or unix:///path (default: $SANDPOD_ADDRESS, the config file, "+sandpod.DefaultAddress+")")
	pf.StringVar(&g.token, "token", "", "bearer token (default: $SANDPOD_TOKEN, the config file)")
	pf.StringVarP(&g.namespace, "namespace", "n", "", "namespace (default: $SANDPOD_NAMESPACE, the config file, default)")
	pf.StringVar(&g.config, "config", "", "config file (default: $SANDPOD_CONFIG, ~/.config/sandpod/config.yaml)")
	pf.BoolVar(&g.insecure, "insecure", false, "no TLS even for a non-loopback address")
	pf.StringVar(&g.tlsCA, "tls-ca", "", "PEM file of the CA of the server's certificate; turns TLS on, for a loopback address too (default: the config file's tlsCA)")
	pf.StringVarP(&g.output, "output", "o", "table", "output format: table, wide, name, json or yaml")
	pf.BoolVar(&g.progress, "progress", false, "show a progress line on waits longer than a second (default: when stderr is a terminal; --progress=false never)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "wide", "name", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

func (g *globalFlags) given(name string) bool {
	f := g.cmd.PersistentFlags().Lookup(name)
	return f != nil && f.Changed
}

// resolve reads the settings once (flags, environment, config file).
func (a *app) resolve() (*Settings, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settings != nil {
		return a.settings, nil
	}
	g := &a.flags
	in := settingsInput{
		address:       flagValue{g.address, g.given("address")},
		token:         flagValue{g.token, g.given("token")},
		namespace:     flagValue{g.namespace, g.given("namespace")},
		config:        flagValue{g.config, g.given("config")},
		tlsCA:         flagValue{g.tlsCA, g.given("tls-ca")},
		getenv:        a.getenv,
		defaultConfig: defaultConfigFile(),
		readFile:      os.ReadFile,
	}
	if g.given("insecure") {
		in.insecure = &g.insecure
	}
	s, err := resolveSettings(in)
	if err != nil {
		return nil, exitErrorf(ExitConfig, "%v", err)
	}
	if w := tokenFileWarning(s); w != "" {
		fmt.Fprintln(a.err, w)
	}
	a.settings = s
	return s, nil
}

// dial returns the client, made on first use. It does not connect: the
// first call does, and fails within the client's connect timeout (3s)
// naming the address when no server answers there.
func (a *app) dial(ctx context.Context) (*sandpod.Client, error) {
	s, err := a.resolve()
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil {
		return a.client, nil
	}
	opts := []sandpod.Option{sandpod.WithToken(s.Token), sandpod.WithNamespace(s.Namespace)}
	switch {
	case s.Insecure && s.TLSCA != "":
		return nil, usageErrorf("--insecure and a TLS CA (%s) contradict each other", s.Sources["tls-ca"])
	case s.Insecure:
		opts = append(opts, sandpod.WithInsecure())
	case s.TLSCA != "":
		pem, err := os.ReadFile(s.TLSCA)
		if err != nil {
			return nil, exitErrorf(ExitConfig, "TLS CA from %s: %v", s.Sources["tls-ca"], err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, exitErrorf(ExitConfig, "TLS CA %s (from %s) holds no PEM certificate", s.TLSCA, s.Sources["tls-ca"])
		}
		opts = append(opts, sandpod.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	}
	c, err := sandpod.Dial(ctx, s.Address, opts...)
	if err != nil {
		return nil, a.commandError(err)
	}
	a.client = c
	return c, nil
}

// outputFormat checks -o against the formats a command supports.
func (a *app) outputFormat(allowed ...string) (string, error) {
	o := a.flags.output
	for _, f := range allowed {
		if o == f {
			return o, nil
		}
	}
	return "", usageErrorf("unknown output format %q (this command knows %v)", o, allowed)
}

// progressOn says whether waits show a progress line: --progress when
// given, else when stderr is a terminal.
func (a *app) progressOn() bool {
	if a.flags.given("progress") {
		return a.flags.progress
	}
	return isTerminal(a.err)
}
