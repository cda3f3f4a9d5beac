package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Options are the agent's command-line settings.
type Options struct {
	Sandbox string
	Root    string
	// Listen is tcp://HOST:PORT, unix:///PATH or fd://N (a listening socket
	// inherited from the local engine).
	Listen string
	// SecretFile holds the sandbox secret (Kubernetes: a mounted Secret).
	SecretFile string
	// TLSCert and TLSKey, when set, make the agent serve TLS (Kubernetes:
	// the sandbox's own certificate from its Secret).
	TLSCert, TLSKey string
	// BridgeCAPin, when set, is the hex SHA-256 of the bridge CA's public key
	// (Kubernetes pods of this controller): the agent makes its own serving
	// certificate in memory, admits only callers with a client certificate
	// of that CA that ask for SandboxUID's identity (core/agentconn), and
	// has no secret; SecretFile and TLSCert are not used.
	BridgeCAPin string
	// BridgeCAKey is the bridge CA's public key (base64 DER, its SHA-256 is
	// BridgeCAPin): the agent seals its identity token to it.
	BridgeCAKey string
	// IdentityTokenFile is the kubelet's projected service-account token of
	// audience sandpod.dev/agent: the agent's certificate carries it
	// (sealed), so that the bridge can authenticate the agent.
	IdentityTokenFile string
	// SandboxUID is the sandbox's UID, whose agentconn.Identity the agent
	// answers to (with BridgeCAPin).
	SandboxUID string
	// HealthListen, when set, serves only the standard health service,
	// without TLS, there: a kubelet's gRPC probe speaks no TLS.
	HealthListen string
	// GateFD, when set, is a pipe the local engine writes the secret to once
	// it has recorded the init's PID; init waits on it before starting
	// anything.
	GateFD int
	// RespawnFD, when set, is the local engine's respawn pipe: the init
	// starts a new agent when the engine asks (a restore in place; see
	// RespawnArm) instead of ending with it.
	RespawnFD int
	// LifelineFD, when set, is the write end of a pipe the init holds for
	// its life and hands to nothing it starts: the local engine's helpers
	// outside the sandbox (pasta) end when it closes, that is when the
	// sandbox's last process is gone.
	LifelineFD int
	// RunAs is "UID:GID": commands (and the template's command) run as this
	// user and group, not as the agent (local engine: the agent is root
	// inside its sandbox, user code is not).
	RunAs string
	// Command, if given, is the template's main program, supervised.
	Command []string
}

// Main runs the agent (or, as PID 1, its init) and returns the exit code.
func Main(ctx context.Context, o Options) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("sandbox", o.Sandbox)
	if err := nonDumpable(); err != nil {
		log.Error("agent", "err", err)
		return 1
	}
	if _, err := parseRunAs(o.RunAs); err != nil {
		log.Error("agent", "err", err)
		return 2
	}
	if IsInit() {
		if o.LifelineFD >= 3 {
			// Close-on-exec: inheritedFiles passes it to no agent.
			unix.CloseOnExec(o.LifelineFD)
		}
		if o.GateFD > 0 {
			secret, err := readSecret(o)
			if err != nil {
				log.Error("init: no secret", "err", err)
				return 1
			}
			return RunInit(secret, o.GateFD, o.RespawnFD)
		}
		if o.BridgeCAPin == "" {
			if _, err := readSecret(o); err != nil {
				log.Error("init: no secret", "err", err)
				return 1
			}
		}
		return RunInit("", 0, 0)
	}
	if err := serve(ctx, o, log); err != nil {
		log.Error("agent stopped", "err", err)
		return 1
	}
	return 0
}

// readSecret reads the secret from the gate pipe (local engine) or the
// secret file (a pod). The agent child reads it the same way: init hands it
// a fresh pipe on the same fd.
func readSecret(o Options) (string, error) {
	if o.GateFD > 0 {
		gate := os.NewFile(uintptr(o.GateFD), "gate")
		defer gate.Close()
		b, err := io.ReadAll(io.LimitReader(gate, 4096))
		if err != nil {
			return "", fmt.Errorf("read gate: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", errors.New("gate closed without a secret")
		}
		return s, nil
	}
	if o.SecretFile == "" {
		return "", errors.New("no secret: set --secret-file (or --gate-fd)")
	}
	b, err := os.ReadFile(o.SecretFile)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", o.SecretFile)
	}
	return s, nil
}

func serve(ctx context.Context, o Options, log *slog.Logger) error {
	var secret string
	var tlsCfg *tls.Config
	var err error
	if o.BridgeCAPin != "" {
		if tlsCfg, err = PinnedTLS(o.BridgeCAPin, o.BridgeCAKey, o.SandboxUID, o.IdentityTokenFile); err != nil {
			return err
		}
	} else if secret, err = readSecret(o); err != nil {
		return err
	}
	lis, err := Listen(o.Listen)
	if err != nil {
		return err
	}
	runAs, err := parseRunAs(o.RunAs)
	if err != nil {
		return err
	}
	srv, err := New(Config{Sandbox: o.Sandbox, Root: o.Root, Secret: secret, ClientCertAuth: tlsCfg != nil, Env: commandEnv(), RunAs: runAs})
	if err != nil {
		return err
	}
	defer srv.Close()
	if o.RespawnFD > 0 {
		// The init's working directory is the mount point under the
		// workspace the engine swaps on a restore: start from the live one.
		_ = os.Chdir(o.Root)
	}
	var opts []grpc.ServerOption
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
		o.TLSCert = ""
	} else if _, err := os.Stat(o.TLSCert); o.TLSCert != "" && errors.Is(err, os.ErrNotExist) {
		// A Secret made before agents had certificates: the bridge, reading
		// the same Secret, finds no certificate and speaks plaintext too.
		log.Warn("no TLS certificate in the sandbox's secret; serving plaintext", "tls-cert", o.TLSCert)
		o.TLSCert = ""
	}
	if o.TLSCert != "" {
		cfg, err := ServerTLS(o.TLSCert, o.TLSKey)
		if err != nil {
			return err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	g := srv.GRPCServer(opts...)
	if o.HealthListen != "" {
		hlis, err := Listen(o.HealthListen)
		if err != nil {
			return err
		}
		h := grpc.NewServer()
		healthpb.RegisterHealthServer(h, health.NewServer())
		go func() { _ = h.Serve(hlis) }()
		defer h.Stop()
	}
	if len(o.Command) > 0 {
		go supervise(ctx, o.Command, o.Root, commandEnv(), runAs, log)
	}
	go func() {
		<-ctx.Done()
		g.GracefulStop()
	}()
	log.Info("agent serving", "listen", o.Listen, "tls", o.TLSCert != "" || tlsCfg != nil, "client-cert-auth", tlsCfg != nil, "health", o.HealthListen, "root", o.Root)
	return g.Serve(lis)
}

// Listen opens the agent's listener from a tcp://, unix:// or fd:// address.
func Listen(addr string) (net.Listener, error) {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return nil, fmt.Errorf("listen address %q: want tcp://HOST:PORT, unix:///PATH or fd://N", addr)
	}
	switch scheme {
	case "tcp":
		return net.Listen("tcp", rest)
	case "unix":
		_ = os.Remove(rest)
		return net.Listen("unix", rest)
	case "fd":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 3 {
			return nil, fmt.Errorf("listen address %q: bad fd", addr)
		}
		// FileListener serves a close-on-exec duplicate; the inherited fd
		// itself is closed, so that no command the agent starts inherits
		// the listening socket (and could accept the engine's calls).
		f := os.NewFile(uintptr(n), "listener")
		defer f.Close()
		return net.FileListener(f)
	}
	return nil, fmt.Errorf("listen address %q: unknown scheme %q", addr, scheme)
}

// commandEnv is the agent's environment without sandpod's own variables.
func commandEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SANDPOD_") {
			env = append(env, kv)
		}
	}
	return env
}

// supervise keeps the template's main program running, restarting it with
// growing pauses when it exits.
func supervise(ctx context.Context, argv []string, dir string, env []string, runAs *syscall.Credential, log *slog.Logger) {
	backoff := time.Second
	for ctx.Err() == nil {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: runAs}
		began := time.Now()
		err := cmd.Run()
		log.Warn("supervised command exited", "argv", argv, "err", err)
		if time.Since(began) > time.Minute {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// parseRunAs reads --run-as "UID:GID" ("" means: as the agent itself).
func parseRunAs(v string) (*syscall.Credential, error) {
	if v == "" {
		return nil, nil
	}
	u, g, ok := strings.Cut(v, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("--run-as %q: want UID:GID", v)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// nonDumpable keeps every process of the sandbox, even one of the same
// user, out of the agent's memory, /proc files and fds: the agent holds the
// sandbox's secret and the socket the engine reaches it by.
func nonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the agent non-dumpable: %w", err)
	}
	return nil
}
