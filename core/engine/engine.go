// Package engine is sandpod's embedded local engine: sandboxes as agent
// process trees in their own Linux namespaces on this machine, with warm
// pools, claims, suspend and resume, shutdown times and idle suspend, and
// state in an embedded store so a restart loses nothing. It makes no
// lifecycle decision itself: those come from core/lifecycle.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/engine/cgroups"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Config configures an Engine.
type Config struct {
	// StateDir holds the store and each sandbox's work directory.
	StateDir string
	// Definitions are the templates and pools to serve.
	Definitions Definitions
	// Executable is the sandpod binary that runs as each sandbox's agent;
	// empty means this process's own executable.
	Executable string
	// AgentBinary is the binary each sandbox runs as its init and agent;
	// empty means findAgent's search (the small sandpod-agent beside
	// Executable, else Executable itself).
	AgentBinary string
	// PoolBatch caps how many members one pool starts at a time (default 4).
	PoolBatch int
	// PoolRefillDelay paces refills (lifecycle.RefillDue): a pool refills
	// once claims have paused this long, so a burst of claims is not slowed
	// by members starting on the same cores (0: refill at once).
	PoolRefillDelay time.Duration
	// StartTimeout bounds a sandbox start (default 30s).
	StartTimeout time.Duration
	// AgentHealthCheck and AgentRestart: liveness checks of running agents
	// and what happens when one dies or hangs (health.go). Zero fields come
	// from the definitions' LocalEngineConfig, then the defaults.
	AgentHealthCheck HealthCheck
	AgentRestart     RestartPolicy
	// Runc is the runc binary that isolates sandboxes; empty means
	// $SANDPOD_RUNC, runc beside Executable, then $PATH.
	Runc string
	// NoLimits runs sandboxes without cgroups of the engine's: no memory,
	// pids or cpu limits and no pause. Without it, New fails (LimitsError)
	// where it cannot apply limits.
	NoLimits bool
	// IDRegistry is the host-wide registry of sandbox id ranges, shared
	// by every engine of the host (idregistry.go); empty means
	// DefaultIDRegistry.
	IDRegistry string
	Logger     *slog.Logger
	// Clock is the time the engine decides by (shutdown times, leases,
	// idle and restart back-offs, quotas); nil means time.Now. Waits on
	// real events (a process's exit, a lock) keep the real clock.
	Clock func() time.Time
}

// Engine is the local backend.
type Engine struct {
	cfg     Config
	log     *slog.Logger
	store   *store
	cg      cgroups.Layout // none with Config.NoLimits
	runc    runc
	ids     *idRegistry
	sockets string
	hub     *hub

	mu          sync.Mutex
	sandboxes   map[string]*sandbox     // ns/name
	templates   map[string]runSpec      // ns/name
	pools       map[string]*pool        // ns/name
	requests    map[string]requestEntry // ns/request-id
	poolBackoff map[string]backoff      // pool key -> start failures
	// quotas are the SandboxQuotas; claimLog the sandboxes handed out in
	// each namespace in the last minute (quota.go).
	quotas   []v1alpha1.SandboxQuota
	claimLog map[string][]lifecycle.QuotaClaim
	// orphans are sandbox directories (ns/name) that no record owns, found
	// at start: their names are not given out again, so a new sandbox never
	// shares the files (or the processes) of one the store forgot.
	orphans map[string]bool
	// moveRange holds the record UIDs whose id range another engine's
	// sandbox holds: they take a new one at their next start (idranges.go).
	moveRange map[string]bool

	// Snapshots (snapshot.go): records by ns/name; snapMu orders the
	// operations that copy or change files of snapshots and workspaces.
	snaps      map[string]*snapRecord
	snapMu     sync.Mutex
	forkMethod string
	forkOwners string // how a fork's files get its ids
	limits     SnapshotLimits
	// disks bound what each sandbox writes to the host (disk_linux.go).
	disks *disks

	kick   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// now is the engine's clock (Config.Clock).
func (e *Engine) now() time.Time {
	if e.cfg.Clock != nil {
		return e.cfg.Clock()
	}
	return time.Now()
}

type pool struct {
	namespace, name, template string
	replicas                  int32
	// snapshot: members are made from it (SandboxWarmPoolSpec.Snapshot).
	snapshot string
	// waitLogged: the pool's missing snapshot was logged.
	waitLogged bool
	// lastClaim, deficit and deficitSince pace the refill
	// (Config.PoolRefillDelay, lifecycle.RefillDue): when a claim last took
	// a member, and since when the pool has been short of members.
	lastClaim    time.Time
	deficit      bool
	deficitSince time.Time
}

// New opens the state and recovers every sandbox from it: running ones are
// found again (or restarted), suspended ones stay suspended.
func New(ctx context.Context, cfg Config) (_ *Engine, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PoolBatch <= 0 {
		cfg.PoolBatch = 4
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	var fromDefs LocalEngineConfig
	if cfg.Definitions.Engine != nil {
		fromDefs = *cfg.Definitions.Engine
	}
	if err := firstErr(cfg.AgentHealthCheck.check(), cfg.AgentRestart.check()); err != nil {
		return nil, err
	}
	cfg.AgentHealthCheck = cfg.AgentHealthCheck.withDefaults(fromDefs.AgentHealthCheck)
	cfg.AgentRestart = cfg.AgentRestart.withDefaults(fromDefs.AgentRestart)
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Executable = exe
	}
	agentBin, small, err := findAgent(cfg.AgentBinary, cfg.Executable)
	if err != nil {
		return nil, err
	}
	if cfg.AgentBinary = agentBin; !small {
		cfg.Logger.Warn("no sandpod-agent beside the engine's binary: sandboxes run the whole binary as their agent, which costs more memory each (make build builds bin/sandpod-agent)", "agent", agentBin)
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	cfg.StateDir = abs
	if os.Geteuid() != 0 {
		return nil, errors.New("the local engine runs as root: each sandbox gets a user namespace mapped to a range of 65,536 host ids of its own " +
			"(none of them the engine's), which only root can map; run `sudo make run` or `sudo bin/sandpod serve`")
	}
	runcBin, err := findRunc(cfg.Runc, cfg.Executable)
	if err != nil {
		return nil, err
	}
	// Before anything is touched: an engine that cannot apply the limits
	// its templates promise does not start (without --no-limits).
	var cg cgroups.Layout
	if !cfg.NoLimits {
		if cg, err = cgroups.Detect(cgroups.HostRoot); err != nil {
			return nil, err
		}
	}
	if cfg.IDRegistry == "" {
		cfg.IDRegistry = DefaultIDRegistry
	}
	ids, err := openIDRegistry(cfg.IDRegistry)
	if err != nil {
		return nil, err
	}
	// Sandbox inits are left to the nearest subreaper when runc exits:
	// the engine, so it reaps them and knows how each ended.
	if err := becomeSubreaper(); err != nil {
		return nil, fmt.Errorf("become a child subreaper: %w", err)
	}
	if err := os.MkdirAll(abs, 0o711); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	// The store first: a state directory it refuses is left as it was.
	st, rep, err := openStore(abs, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			st.close() // one way out for every failure below
		}
	}()
	if err := os.MkdirAll(filepath.Join(abs, "sandboxes"), 0o711); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := searchable(filepath.Join(abs, "sandboxes")); err != nil {
		return nil, err
	}
	if len(rep.Orphans) > 0 {
		cfg.Logger.Warn("sandbox directories without a record in the store (made after the backup it was restored from?): kept, not managed; see docs/local-engine.md",
			"dirs", rep.Orphans)
	}
	e := &Engine{
		cfg:         cfg,
		log:         cfg.Logger,
		store:       st,
		cg:          cg,
		runc:        runc{bin: runcBin, root: filepath.Join(abs, "runc"), noCgroups: !cg.Usable(), cgroups: cgroups.Host(cgroups.HostRoot)},
		ids:         ids,
		moveRange:   map[string]bool{},
		sockets:     socketDir(abs),
		hub:         newHub(),
		sandboxes:   map[string]*sandbox{},
		templates:   map[string]runSpec{},
		pools:       map[string]*pool{},
		poolBackoff: map[string]backoff{},
		quotas:      cfg.Definitions.Quotas,
		claimLog:    map[string][]lifecycle.QuotaClaim{},
		orphans:     map[string]bool{},
		snaps:       map[string]*snapRecord{},
		limits:      fromDefs.Snapshots.withDefaults(),
		disks:       detectDisks(abs),
		kick:        make(chan struct{}, 1),
	}
	for _, d := range rep.Orphans {
		e.orphans[d] = true
	}
	if err := ownedPrivateDir(e.sockets); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.runc.root, 0o700); err != nil {
		return nil, err
	}
	for i := range cfg.Definitions.Templates {
		t := &cfg.Definitions.Templates[i]
		rs, err := resolveTemplate(t)
		if err != nil {
			return nil, err
		}
		e.templates[t.Namespace+"/"+t.Name] = rs
	}
	if e.disks.enforced() {
		go e.disks.warm(diskSizes(e.templates))
	}
	recs, reqs, overrides, err := st.loadAll()
	if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	e.requests = reqs
	for _, p := range cfg.Definitions.Pools {
		key := p.Namespace + "/" + p.Name
		n := p.Spec.Replicas
		if o, ok := overrides[key]; ok {
			n = o // ScaleWarmPool outlives a restart
		}
		// A pool fills at once when the engine starts, as after a scale: no
		// claim to yield to, and a deficit as old as can be.
		e.pools[key] = &pool{namespace: p.Namespace, name: p.Name, template: p.Spec.TemplateRef.Name, replicas: n, snapshot: p.Spec.Snapshot, deficit: true}
	}
	if err := e.recoverSnapshots(); err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	if !cg.Usable() {
		e.log.Warn("running WITHOUT sandbox limits (--no-limits): sandboxes get no memory, pids or cpu limit, " +
			"a runaway one can take the whole machine, and pause is refused; drop --no-limits to have serve apply them")
	}
	e.log.Info("local engine", "state", abs, "limits", e.cg.String(), "disk", e.disks.String(),
		"agentHealthCheck", fmt.Sprintf("every %s, timeout %s, %d failures kill", cfg.AgentHealthCheck.Period.Duration, cfg.AgentHealthCheck.Timeout.Duration, cfg.AgentHealthCheck.FailureThreshold),
		"agentRestart", fmt.Sprintf("%s, back-off %s..%s, reset after %s", cfg.AgentRestart.Policy, cfg.AgentRestart.InitialBackoff.Duration, cfg.AgentRestart.MaxBackoff.Duration, cfg.AgentRestart.ResetAfter.Duration),
		"isolation", "runc "+runcBin+": user namespace on a host id range of its own, pid, mount, network, uts, ipc and cgroup namespaces, own root file system, seccomp, no_new_privs")
	e.recover(ctx, recs)
	e.leaseGrace(e.now())
	return e, nil
}

// Start runs the background loops (pools, expiry, idle suspend, agent
// restarts; agent health checks) until Close.
func (e *Engine) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		e.loop(ctx)
	}()
	go func() {
		defer e.wg.Done()
		e.livenessLoop(ctx)
	}()
	e.poke()
}

// Close stops the loops and the store. Sandboxes keep running: a restarted
// engine finds them again. The cgroups of sandboxes deleted a moment ago
// are waited for (bounded): their removal retries in the background until
// the killed processes have left them.
func (e *Engine) Close() error {
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	if !cgroups.AwaitPendingRemovals(closeCgroupWait) {
		e.log.Warn("cgroups of deleted sandboxes still busy at exit; the next engine start removes them", "waited", closeCgroupWait)
	}
	return e.store.close()
}

// closeCgroupWait bounds how long Close waits for pending cgroup removals.
const closeCgroupWait = 10 * time.Second

// Limits describes the isolation and limits applied on this machine.
func (e *Engine) Limits() string { return e.cg.String() }

// recover rebuilds the in-memory state from records after a (re)start.
func (e *Engine) recover(ctx context.Context, recs []record) {
	for _, r := range recs {
		sb := makeSandbox(r)
		e.sandboxes[r.key()] = sb
		cg := e.containerCgroup(r.Container)
		if f, ok := cg.Freezer(); ok {
			if _, err := os.Stat(f.Write); err != nil {
				cg = cgroups.Container{} // started by a serve with --no-limits: runc's, if any
			}
		}
		if p := adoptProcess(e.runc, r.Container, cg, r.PID, r.PIDStart); p != nil {
			sb.proc = p
			sb.workload = lifecycle.WorkloadStarting
			// Started by an engine without the socket cap: the sockets it
			// opens from now on are charged (sockmem_linux.go).
			if e.cg.Usable() {
				if err := e.cg.LimitSocketMemory(r.Container, cgroups.SocketMemoryLimit(r.Spec.MemoryBytes, cgroups.HostTCPMemMax())); err != nil {
					e.log.Warn("adopted sandbox's socket buffers left uncapped", "sandbox", r.key(), "err", err)
				}
			}
		}
	}
	e.reconcileIDRanges()
	// Each sandbox's disk first (after a reboot or a purge): nothing may
	// read or write its directory before its own file system is on it.
	e.reattachDisks()
	var wg sync.WaitGroup
	for _, sb := range e.sandboxes {
		wg.Add(1)
		go func(sb *sandbox) {
			defer wg.Done()
			e.recoverOne(ctx, sb)
		}(sb)
	}
	wg.Wait()
	e.sweepSockets()
	e.sweepBundles()
	e.sweepContainers()
	if n := sweepPastaDirs(os.TempDir(), e.now()); n > 0 {
		e.log.Info("removed pasta directories left by an earlier exit", "count", n)
	}
	go func() {
		if n := e.runc.cgroups.SweepStray(cgroups.StrayDelay); n > 0 {
			e.log.Info("removed empty cgroups left by an earlier exit", "count", n)
		}
	}()
}

// sweepContainers removes what is left of containers that no sandbox owns
// and whose init is gone (an engine that died between starting one and
// recording it: its init exits when the gate closes): runc state and
// cgroups. A running one without a record (its record lost to a restore of
// an older backup) is left running, as its directory is; purge stops it.
func (e *Engine) sweepContainers() {
	e.mu.Lock()
	owned := map[string]bool{}
	for _, sb := range e.sandboxes {
		owned[sb.rec.Container] = true
	}
	e.mu.Unlock()
	for _, id := range e.runc.list() {
		switch {
		case owned[id]:
		case e.runc.running(id):
			e.log.Warn("a running container without a record: kept; `sandpod purge` stops it", "id", id)
		default:
			if err := e.runc.remove(id); err != nil {
				e.log.Warn("remove a stray container", "id", id, "err", err)
			}
		}
	}
}

func (e *Engine) recoverOne(ctx context.Context, sb *sandbox) {
	switch {
	case sb.rec.Deleting:
		_ = e.finishDelete(sb)
	case sb.proc != nil && lifecycle.ShouldRunWorkload(sb.observed()):
		paused, err := e.recoverFrozen(sb)
		if err != nil {
			e.log.Warn("could not make the freezer follow the record; restarting the sandbox", "sandbox", sb.key(), "paused", paused, "err", err)
			_ = sb.proc.kill(10 * time.Second)
			e.agentDown(sb, "could not be frozen or thawed when the engine started: "+err.Error())
			return
		}
		if paused {
			// A frozen agent cannot answer; it stays paused, as recorded.
			e.mu.Lock()
			sb.workload = lifecycle.WorkloadReady
			e.mu.Unlock()
			e.watchExit(sb, sb.proc)
			return
		}
		if err := e.awaitAgent(ctx, sb, sb.proc); err != nil {
			e.log.Warn("running sandbox did not answer after restart; restarting it", "sandbox", sb.key(), "err", err)
			_ = sb.proc.kill(10 * time.Second)
			e.agentDown(sb, "did not answer when the engine started")
			return
		}
		e.mu.Lock()
		sb.workload = lifecycle.WorkloadReady
		sb.lastAnswer = e.now()
		e.mu.Unlock()
		e.watchExit(sb, sb.proc)
	case sb.proc != nil:
		// Suspended or expired, yet still running (the engine died while
		// stopping it): finish the stop.
		_ = sb.proc.kill(10 * time.Second)
		sb.proc.release()
		sb.proc = nil
	case lifecycle.ShouldRunWorkload(sb.observed()) && sb.rec.PID != 0:
		// Its agent died while no engine watched (a reboot, a kill).
		e.agentDown(sb, "found dead when the engine started")
	case lifecycle.ShouldRunWorkload(sb.observed()) && !sb.rec.RestartDue.IsZero():
		// A restart waiting out its back-off: the loop starts it when due.
	case lifecycle.ShouldRunWorkload(sb.observed()):
		_ = e.run(ctx, sb)
	}
}

// sweepSockets removes agent sockets left by sandboxes that are gone: those
// that no record owns and that nothing listens on. A socket with a listener
// is a live agent and stays, even when the store has no record of it (it was
// restored from an older backup): removing it would cut that sandbox off for
// good. Asking by connecting works whichever namespace bound the socket.
func (e *Engine) sweepSockets() {
	known := map[string]bool{}
	for _, sb := range e.sandboxes {
		known[e.socketPath(&sb.rec)] = true
	}
	entries, _ := os.ReadDir(e.sockets)
	for _, ent := range entries {
		p := filepath.Join(e.sockets, ent.Name())
		isSocket := ent.Type()&fs.ModeSocket != 0
		if known[p] || !isSocket {
			continue // dial only what might go
		}
		if staleSocket(known[p], isSocket, dialUnix(p)) {
			_ = os.Remove(p)
		} else {
			e.log.Warn("kept an agent socket that no sandbox record owns: it did not refuse a connection (a live agent)", "socket", p)
		}
	}
}

// searchable checks that sandboxes, which reach their root file systems
// and work directories as unprivileged host ids, can pass through every
// directory above dir (search, not read: nobody lists the state).
func searchable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("state directory: sandboxes cannot pass through %s (mode %o): run `chmod o+x %s`, or use a --state-dir whose parents are searchable (the default for root is /var/lib/sandpod)", d, fi.Mode().Perm(), d)
		}
		if d == "/" {
			return nil
		}
	}
}

// SocketDir is the directory where the engine on stateDir keeps its agents'
// sockets.
func SocketDir(stateDir string) (string, error) {
	abs, err := filepath.Abs(stateDir)
	return socketDir(abs), err
}

// dialUnix connects to a unix socket and hangs up: nil means a listener.
func dialUnix(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// ownedPrivateDir makes dir (a predictable path under $TMPDIR) and checks
// that it is a real directory of ours that nobody else can enter, so another
// local user cannot plant sockets in it.
func ownedPrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("socket directory %s is not a private directory owned by this user; remove it", dir)
	}
	return nil
}

func (e *Engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) workDir(r *record) string {
	return filepath.Join(sandboxDir(e.cfg.StateDir, r), "work")
}

func (e *Engine) socketPath(r *record) string {
	return filepath.Join(e.sockets, r.UID[:16]+".sock")
}

func cgroupID(r *record) string { return "sb-" + r.UID[:16] }

func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// specHash is the template hash of a run spec, computed without its own
// Hash field; pool members whose hash differs roll.
func (rs runSpec) specHash() string {
	rs.Hash = ""
	return lifecycle.TemplateHash(rs)
}

var errGone = errors.New("sandbox deleted")
