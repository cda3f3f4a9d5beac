package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// maxConcurrentProbes bounds the health checks in flight at once: a round
// over many hung agents takes longer, it never floods the machine.
const maxConcurrentProbes = 8

// probe is one health check of one running agent.
type probe struct {
	sb             *sandbox
	p              *process
	target, secret string
}

// livenessLoop checks every running agent once per period (one goroutine
// for the engine; a round's checks run side by side, and the next round
// starts only when this one is over). An agent that fails the threshold of
// checks in a row is hung: the engine kills its process tree, and watchExit
// hands it to the restart policy like any other death.
func (e *Engine) livenessLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.AgentHealthCheck.Period.Duration)
	defer t.Stop()
	conns := map[*process]*grpc.ClientConn{} // one per agent process, reused
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.checkAgents(ctx, conns)
	}
}

func (e *Engine) checkAgents(ctx context.Context, conns map[*process]*grpc.ClientConn) {
	e.mu.Lock()
	var probes []probe
	for _, sb := range e.sandboxes {
		// A paused sandbox's agent is frozen: its silence is no failure.
		if sb.proc == nil || sb.busy || sb.rec.Deleting || sb.workload != lifecycle.WorkloadReady || sb.killedFor != "" ||
			sb.rec.Mode == v1alpha1.OperatingModePaused {
			continue
		}
		probes = append(probes, probe{sb: sb, p: sb.proc, target: "unix://" + e.socketPath(&sb.rec), secret: sb.rec.Secret})
	}
	e.mu.Unlock()

	live := make(map[*process]bool, len(probes))
	for _, pr := range probes {
		live[pr.p] = true
	}
	for p, c := range conns {
		if !live[p] {
			_ = c.Close()
			delete(conns, p)
		}
	}
	sem := make(chan struct{}, maxConcurrentProbes)
	var wg sync.WaitGroup
	for _, pr := range probes {
		conn := conns[pr.p]
		if conn == nil {
			c, err := grpc.NewClient(pr.target,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithConnectParams(grpc.ConnectParams{
					Backoff:           grpcbackoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
					MinConnectTimeout: e.cfg.AgentHealthCheck.Timeout.Duration,
				}))
			if err != nil {
				continue
			}
			conns[pr.p], conn = c, c
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(pr probe, conn *grpc.ClientConn) {
			defer wg.Done()
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, e.cfg.AgentHealthCheck.Timeout.Duration)
			defer cancel()
			pctx = metadata.AppendToOutgoingContext(pctx, agentconn.SecretMetadataKey, pr.secret)
			_, err := sandpodv1.NewAgentServiceClient(conn).GetAgentInfo(pctx, &sandpodv1.GetAgentInfoRequest{}, grpc.WaitForReady(true))
			if ctx.Err() == nil {
				e.probed(pr, err)
			}
		}(pr, conn)
	}
	wg.Wait()
}

// probed records a health check's result and kills a hung agent.
func (e *Engine) probed(pr probe, err error) {
	now := e.now()
	e.mu.Lock()
	sb := pr.sb
	if sb.proc != pr.p || sb.killedFor != "" || sb.rec.Mode == v1alpha1.OperatingModePaused {
		e.mu.Unlock()
		return // stopped, restarted, being killed or paused meanwhile
	}
	if err == nil {
		sb.healthFails, sb.lastAnswer = 0, now
		e.mu.Unlock()
		return
	}
	sb.healthFails++
	failures, key := sb.healthFails, sb.key()
	if !agentHung(failures, e.cfg.AgentHealthCheck.FailureThreshold) {
		e.mu.Unlock()
		e.log.Warn("agent health check failed", "sandbox", key, "failures", failures, "err", err)
		return
	}
	silent := now.Sub(sb.lastAnswer)
	sb.killedFor = hangReason(failures, silent)
	e.mu.Unlock()
	e.log.Warn(fmt.Sprintf("agent did not answer health checks for %s; killed", silent.Round(time.Second)),
		"sandbox", key, "failures", failures, "err", err)
	go func() {
		if err := pr.p.kill(10 * time.Second); err != nil {
			e.log.Error("kill hung agent", "sandbox", key, "err", err)
		}
	}()
}
