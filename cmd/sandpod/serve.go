package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandpod/sandpod/bridge"
	"github.com/sandpod/sandpod/bridge/local"
	"github.com/sandpod/sandpod/core/engine"
)

//go:embed default-templates.yaml
var defaultTemplates []byte

var _ bridge.Backend = (*local.Backend)(nil)

func init() {
	register("serve", "run the bridge on the embedded local engine (no cluster needed)", runServe)
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runServe(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var sf serverFlags
	sf.register(fs, "127.0.0.1:50051")
	stateDir := fs.String("state-dir", defaultStateDir(), "where sandboxes and the state store live")
	var configs stringList
	fs.Var(&configs, "config", "SandboxTemplate/SandboxWarmPool YAML file or directory (repeatable; default: a python template with a pool of 2)")
	refillDelay := fs.Duration("pool-refill-delay", 0, "how long claims must pause before a warm pool refills (refills yield to claims, at most 10 times this long; a pool below half its size waits only this long; 0 refills at once; the same rule as sandpod controller)")
	runc := fs.String("runc", "", "the runc binary that isolates sandboxes (default: $SANDPOD_RUNC, runc beside this binary, then $PATH)")
	agentBin := fs.String("agent", "", "the binary each sandbox runs as its agent, mounted read-only (default: $SANDPOD_AGENT, sandpod-agent beside this binary, else this binary)")
	idRegistry := fs.String("id-registry", engine.DefaultIDRegistry, "the host-wide registry of sandbox id ranges, shared by every serve of this host so that no two sandboxes share a host id")
	noLimits := fs.Bool("no-limits", false, "run sandboxes without cgroup limits (no memory, pids or cpu limit, no pause) where serve cannot apply them; without it serve refuses to start there")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := sf.check(); err != nil {
		log.Error("serve: " + err.Error())
		return 2
	}
	if sf.preview.keyFile == "" {
		sf.preview.keyFile = filepath.Join(*stateDir, "preview.key")
	}
	sf.preview.statePath = filepath.Join(*stateDir, "previews.json")
	o := serveOptions{server: sf, stateDir: *stateDir, configs: configs, refillDelay: *refillDelay, runc: *runc, agent: *agentBin, noLimits: *noLimits, idRegistry: *idRegistry}
	if err := serve(ctx, log, o); err != nil {
		var se *engine.StoreError
		var le *engine.LimitsError
		if errors.As(err, &se) || errors.As(err, &le) {
			// Said as it is, over several lines: what is wrong and what to
			// do, not a log record to decode.
			fmt.Fprintln(os.Stderr, "sandpod serve: "+err.Error())
			return 1
		}
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

type serveOptions struct {
	server      serverFlags
	stateDir    string
	configs     []string
	refillDelay time.Duration
	runc        string
	agent       string
	noLimits    bool
	idRegistry  string
}

func serve(ctx context.Context, log *slog.Logger, o serveOptions) error {
	defs, err := loadDefinitions(o.configs)
	if err != nil {
		return err
	}
	bo, err := o.server.bridgeOptions()
	if err != nil {
		return err
	}
	eng, err := engine.New(ctx, engine.Config{StateDir: o.stateDir, Definitions: defs, Logger: log, PoolRefillDelay: o.refillDelay, Runc: o.runc, AgentBinary: o.agent, NoLimits: o.noLimits, IDRegistry: o.idRegistry})
	if err != nil {
		return err
	}
	eng.Start()

	b := bridge.New(local.New(eng))
	log.Info("sandpod serving", "state", o.stateDir, "templates", len(defs.Templates), "pools", len(defs.Pools))
	err = serveGRPC(ctx, log, b, bo, o.server)
	b.Close()
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	if ctx.Err() != nil { // SIGINT (Ctrl-C) or SIGTERM
		log.Info(stoppedMessage(eng, o.stateDir))
	}
	return err
}

// stoppedMessage says, in one line, what a stop leaves behind. Sandboxes
// outlive serve on purpose (a restart, even after kill -9, takes them over
// with their processes and files), which is a surprise after a Ctrl-C in
// the foreground unless serve says so and how to stop them.
func stoppedMessage(eng *engine.Engine, stateDir string) string {
	claimed, members := eng.Running()
	n := claimed + members
	if n == 0 {
		return "sandpod serve stopped; no sandbox is running"
	}
	keep := fmt.Sprintf("%d sandboxes keep", n)
	if n == 1 {
		keep = "1 sandbox keeps"
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "sandpod"
	}
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return fmt.Sprintf("sandpod serve stopped; %s running (%d claimed, %d warm pool members) and the next serve on %s takes them over; to stop them: %s purge --state-dir %s",
		keep, claimed, members, stateDir, shellQuote(exe), shellQuote(stateDir))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	if os.Geteuid() == 0 {
		// Not under /root (mode 0700): sandboxes reach their root file
		// systems here as unprivileged host ids.
		return "/var/lib/sandpod"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "sandpod")
	}
	return "sandpod-state"
}
