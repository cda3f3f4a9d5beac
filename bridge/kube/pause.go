package kube

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Pause on Kubernetes: the cgroup file system is read-only in a pod, so the
// bridge asks the sandbox's agent to stop every process of the sandbox but
// itself (AgentService.SetPaused, core/agent/freeze_linux.go), then records
// operatingMode Paused on the Sandbox; the controller keeps the pod and
// reports phase Paused and the Paused condition. Resume is the reverse:
// SIGCONT through the agent, then operatingMode Running. A pod replaced
// while paused (node loss, eviction) comes back with fresh processes (what
// was frozen is gone with its memory) and still Paused until resumed.

// PauseSandbox freezes a running sandbox's processes in its pod.
func (b *Backend) PauseSandbox(ctx context.Context, ns, name string) (*sandpodv1.Sandbox, error) {
	ns = nsOr(ns)
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallPause, sb); err != nil {
		return nil, err
	}
	phase := phaseOf(sb)
	if sb.Spec.OperatingMode == v1alpha1.OperatingModePaused {
		phase = v1alpha1.SandboxPaused // the controller may not have reported it yet
	}
	switch dec, why := lifecycle.Pause(name, phase); dec {
	case lifecycle.PauseRefuse:
		reason := lifecycle.RefusalReason(phase)
		return nil, errinfo.Newf(codes.FailedPrecondition, reason, "%s", why)
	case lifecycle.PauseNothing:
		return withPhase(sandboxToProto(sb, b.clusterDomain), sandpodv1.Phase_PHASE_PAUSED), nil
	}
	if err := b.setPaused(ctx, sb, true); err != nil {
		return nil, err
	}
	if err := b.patchSpec(ctx, sb, map[string]any{"operatingMode": v1alpha1.OperatingModePaused}); err != nil {
		_ = b.setPaused(ctx, sb, false) // not recorded: do not leave it frozen
		return nil, sandboxError(err, ns, name, "pause sandbox %q", name)
	}
	return withPhase(sandboxToProto(sb, b.clusterDomain), sandpodv1.Phase_PHASE_PAUSED), nil
}

// resumePaused thaws a paused sandbox (ResumeSandbox of one whose mode is
// Paused): SIGCONT through its agent, then operatingMode Running.
func (b *Backend) resumePaused(ctx context.Context, sb *v1alpha1.Sandbox) (*sandpodv1.Sandbox, error) {
	// A pod without an IP is being replaced: its new agent froze nothing.
	if len(sb.Status.PodIPs) > 0 {
		if err := b.setPaused(ctx, sb, false); err != nil {
			return nil, err
		}
	}
	if err := b.patchSpec(ctx, sb, map[string]any{"operatingMode": v1alpha1.OperatingModeRunning}); err != nil {
		return nil, sandboxError(err, sb.Namespace, sb.Name, "resume sandbox %q", sb.Name)
	}
	return withPhase(sandboxToProto(sb, b.clusterDomain), sandpodv1.Phase_PHASE_RUNNING), nil
}

// setPaused calls the sandbox agent's SetPaused on a connection of its own
// (pause and resume are rare; exec and files use the bridge's pool).
func (b *Backend) setPaused(ctx context.Context, sb *v1alpha1.Sandbox, paused bool) error {
	if len(sb.Status.PodIPs) == 0 {
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonSandboxNotRunning, "sandbox %q has no pod IP yet; retry", sb.Name)
	}
	ep, err := b.endpoint(ctx, sb)
	if err != nil {
		return err
	}
	creds := insecure.NewCredentials()
	if ep.TLS != nil {
		creds = credentials.NewTLS(ep.TLS)
	}
	conn, err := grpc.NewClient(ep.Target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentUnreachable, "sandbox %q: connect to agent: %v", sb.Name, err)
	}
	defer conn.Close()
	actx := metadata.AppendToOutgoingContext(ctx, agentconn.SecretMetadataKey, ep.Secret)
	if _, err := sandpodv1.NewAgentServiceClient(conn).SetPaused(actx, &sandpodv1.SetPausedRequest{Paused: paused}, grpc.WaitForReady(true)); err != nil {
		verb := "pause"
		if !paused {
			verb = "resume"
		}
		if st, ok := status.FromError(err); ok && st.Code() != codes.Unavailable && st.Code() != codes.DeadlineExceeded {
			return err
		}
		return errinfo.Newf(codes.Unavailable, errinfo.ReasonAgentUnreachable, "sandbox %q: %s: its agent is unreachable (%v); retry", sb.Name, verb, err)
	}
	return nil
}

func withPhase(p *sandpodv1.Sandbox, phase sandpodv1.Phase) *sandpodv1.Sandbox {
	p.Phase = phase
	return p
}
