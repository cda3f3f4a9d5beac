package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agent"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// run starts a sandbox's process tree and waits until its agent answers.
// The caller must not hold e.mu.
func (e *Engine) run(ctx context.Context, sb *sandbox) error {
	e.mu.Lock()
	if sb.busy || sb.proc != nil {
		e.mu.Unlock()
		return nil
	}
	sb.busy = true
	sb.workload = lifecycle.WorkloadStarting
	sb.rec.Message = ""
	rec := sb.rec
	e.mu.Unlock()
	e.publish(sb)

	p, err := e.launch(&rec)
	if err == nil {
		err = e.awaitAgent(ctx, sb, p)
		if err != nil {
			_ = p.kill(10 * time.Second)
		}
	}

	e.mu.Lock()
	sb.busy = false
	if err != nil {
		sb.workload = lifecycle.WorkloadFailed
		sb.rec.Message = "start failed: " + err.Error() + " (see " + e.logPath(&rec) + ")"
		e.mu.Unlock()
		e.log.Error("sandbox start failed", "sandbox", rec.key(), "err", err)
		e.publish(sb)
		return err
	}
	sb.proc = p
	sb.workload = lifecycle.WorkloadReady
	gone := sb.rec.Deleting || !lifecycle.ShouldRunWorkload(sb.observed())
	e.mu.Unlock()
	if gone {
		// Suspended or deleted while starting: stop what was just started.
		e.stop(sb)
		return errGone
	}
	e.watchExit(sb, p)
	e.publish(sb)
	return nil
}

func (e *Engine) launch(rec *record) (*process, error) {
	wd := e.workDir(rec)
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return nil, err
	}
	cg, err := e.cgroups.create(cgroupID(rec), rec.Spec)
	if err != nil {
		return nil, fmt.Errorf("cgroup limits: %w", err)
	}
	p, err := startProcess(launch{
		exe:     e.cfg.Executable,
		name:    rec.Name,
		workDir: wd,
		socket:  e.socketPath(rec),
		logPath: e.logPath(rec),
		secret:  rec.Secret,
		hide:    e.cfg.StateDir,
		spec:    rec.Spec,
		cgroup:  cg,
		setupPID: func(pid int, start uint64) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			sb := e.sandboxes[rec.key()]
			if sb == nil || sb.rec.UID != rec.UID {
				return errGone
			}
			sb.rec.PID, sb.rec.PIDStart = pid, start
			return e.store.put(&sb.rec, "", nil)
		},
	})
	if err != nil && cg != nil {
		_ = cg.remove()
	}
	return p, err
}

func (e *Engine) logPath(r *record) string {
	return filepath.Join(e.cfg.StateDir, "sandboxes", r.Namespace, r.Name, "agent.log")
}

// awaitAgent waits until the agent answers a health call, or p dies.
func (e *Engine) awaitAgent(ctx context.Context, sb *sandbox, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	e.mu.Lock()
	target, secret := "unix://"+e.socketPath(&sb.rec), sb.rec.Secret
	e.mu.Unlock()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, agent.SecretMetadataKey, secret)
	_, err = sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(ctx, &sandpodv1.GetAgentInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		select {
		case <-p.done:
			return fmt.Errorf("agent %s", p.exit)
		default:
			return fmt.Errorf("agent did not answer: %w", err)
		}
	}
	return nil
}

// watchExit marks the sandbox failed if its process tree dies while it
// should be running (a crash, the OOM killer, someone's kill -9).
func (e *Engine) watchExit(sb *sandbox, p *process) {
	go func() {
		<-p.done
		e.mu.Lock()
		if sb.proc != p {
			e.mu.Unlock()
			return // stopped on purpose
		}
		sb.proc = nil
		sb.workload = lifecycle.WorkloadFailed
		sb.rec.Message = "sandbox process tree " + p.exit + " (see " + e.logPath(&sb.rec) + ")"
		sb.rec.PID, sb.rec.PIDStart = 0, 0
		rec := sb.rec
		e.mu.Unlock()
		_ = e.store.put(&rec, "", nil)
		p.releaseCgroup()
		e.log.Warn("sandbox process tree ended", "sandbox", rec.key(), "how", p.exit)
		e.publish(sb)
		e.poke()
	}()
}

// stop kills a sandbox's process tree, keeping its files.
func (e *Engine) stop(sb *sandbox) {
	e.mu.Lock()
	p := sb.proc
	sb.proc = nil
	sb.workload = lifecycle.WorkloadAbsent
	sb.rec.PID, sb.rec.PIDStart = 0, 0
	e.mu.Unlock()
	if p != nil {
		if err := p.kill(10 * time.Second); err != nil {
			e.log.Error("stop sandbox", "sandbox", sb.rec.key(), "err", err)
		}
		p.releaseCgroup()
	}
}

// finishDelete stops a sandbox marked Deleting, removes its files and record.
func (e *Engine) finishDelete(sb *sandbox) error {
	e.stop(sb)
	e.mu.Lock()
	rec := sb.rec
	e.mu.Unlock()
	_ = e.cgroups.removeAll(cgroupID(&rec)) // also those of processes adopted after a restart
	_ = os.Remove(e.socketPath(&rec))
	if err := os.RemoveAll(filepath.Join(e.cfg.StateDir, "sandboxes", rec.Namespace, rec.Name)); err != nil {
		return fmt.Errorf("remove files of %s: %w", rec.key(), err)
	}
	if err := e.store.delete(rec.key()); err != nil {
		return err
	}
	e.mu.Lock()
	if e.sandboxes[rec.key()] == sb {
		delete(e.sandboxes, rec.key())
	}
	e.mu.Unlock()
	e.hub.publish(event{typ: sandpodv1.WatchSandboxesResponse_EVENT_TYPE_DELETED, sb: e.snapshot(sb)})
	return nil
}
