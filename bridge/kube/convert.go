package kube

import (
	"sort"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// isPoolMember says whether a sandbox waits in a warm pool, unclaimed.
func isPoolMember(sb *v1alpha1.Sandbox) bool { return adopt.Pooled(sb) }

// phaseOf is the sandbox's phase as the API reports it: Terminating once it
// is being deleted, Pending before the controller's first status.
func phaseOf(sb *v1alpha1.Sandbox) v1alpha1.SandboxPhase {
	if sb.DeletionTimestamp != nil {
		return v1alpha1.SandboxTerminating
	}
	if sb.Status.Phase == "" {
		return v1alpha1.SandboxPending
	}
	return sb.Status.Phase
}

// reportedPhase is the phase the API answers for sb: phaseOf, except for a
// pause or a resume the controller has not reported yet. PauseSandbox
// freezes the processes and resumePaused thaws them before they set
// operatingMode, so while the controller still reports Running (Paused)
// the mode Paused (Running) is already true; a GetSandbox right after a
// pause answers Paused, as the pause itself did.
func reportedPhase(sb *v1alpha1.Sandbox) v1alpha1.SandboxPhase {
	phase, mode := phaseOf(sb), sb.Spec.OperatingMode
	switch {
	case phase == v1alpha1.SandboxRunning && mode == v1alpha1.OperatingModePaused:
		return v1alpha1.SandboxPaused
	case phase == v1alpha1.SandboxPaused && mode == v1alpha1.OperatingModeRunning:
		return v1alpha1.SandboxRunning
	}
	return phase
}

// sandboxToProto is sb as the API answers it. clusterDomain is the cluster's
// DNS domain (Options.ClusterDomain; empty: the default): a sandbox with a
// service that the controller has not written a status for yet (one just
// created) is answered with the name it will have, so a client learns it from
// its create call.
func sandboxToProto(sb *v1alpha1.Sandbox, clusterDomain string) *sandpodv1.Sandbox {
	out := &sandpodv1.Sandbox{
		Name:           sb.Name,
		Namespace:      sb.Namespace,
		Uid:            string(sb.UID),
		Labels:         sb.Labels,
		Phase:          protoconv.Phase(reportedPhase(sb)),
		Message:        sb.Status.Message,
		CreateTime:     timestamppb.New(sb.CreationTimestamp.Time),
		ShutdownPolicy: protoconv.Policy(lifecycle.EffectivePolicy(sb.Spec.Lifecycle.ShutdownPolicy, "")),
		Claimed:        !isPoolMember(sb),
		ServiceFqdn:    sb.Status.ServiceFQDN,
		AgentRestarts:  sb.Status.AgentRestarts,
		PodRestarts:    sb.Status.PodRestarts,
	}
	if out.ServiceFqdn == "" && sb.Spec.Service && sb.DeletionTimestamp == nil {
		out.ServiceFqdn = v1alpha1.ServiceFQDN(sb, clusterDomain)
	}
	if sb.Spec.TemplateRef != nil {
		out.Template = sb.Spec.TemplateRef.Name
	}
	out.Pool = sb.Labels[v1alpha1.LabelPool]
	if out.Pool == "" {
		out.Pool = sb.Annotations[v1alpha1.AnnotationFromPool]
	}
	if t := sb.Spec.Lifecycle.ShutdownTime; t != nil {
		out.ShutdownTime = timestamppb.New(t.Time)
	}
	if lease, exp, ok := leaseOf(sb); ok {
		out.Lease, out.LeaseExpireTime = durationpb.New(lease), timestamppb.New(exp)
	}
	if t := sb.Status.LastActivityTime; t != nil {
		out.LastActivityTime = timestamppb.New(t.Time)
	}
	if d := sb.Spec.Lifecycle.IdleTimeout; d != nil && d.Duration > 0 {
		out.IdleTimeout = durationpb.New(d.Duration)
	}
	for _, c := range sb.Status.Conditions {
		out.Conditions = append(out.Conditions, &sandpodv1.Condition{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: timestamppb.New(c.LastTransitionTime.Time),
		})
	}
	for _, e := range sb.Spec.Env {
		out.EnvKeys = append(out.EnvKeys, e.Name)
	}
	sort.Strings(out.EnvKeys)
	return out
}

func templateToProto(t *v1alpha1.SandboxTemplate) *sandpodv1.Template {
	out := &sandpodv1.Template{
		Name:           t.Name,
		Namespace:      t.Namespace,
		ShutdownPolicy: protoconv.Policy(lifecycle.EffectivePolicy(t.Spec.Lifecycle.ShutdownPolicy, "")),
		AutoResume:     t.Spec.AutoResume,
		NetworkIsolated: t.Spec.NetworkPolicy != nil && t.Spec.NetworkPolicy.Egress == v1alpha1.EgressNone &&
			(t.Spec.NetworkPolicy.Managed == nil || *t.Spec.NetworkPolicy.Managed),
	}
	pod := t.Spec.PodTemplate.Spec
	if i := v1alpha1.AgentContainerIndex(&pod, t.Spec.AgentContainer); i >= 0 {
		c := pod.Containers[i]
		out.Image = c.Image
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			out.MemoryLimitBytes = q.Value()
		}
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			out.CpuLimitMillis = q.MilliValue()
		}
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok {
			out.DiskLimitBytes = q.Value() // the kubelet evicts a pod past it
		}
	}
	switch {
	case pod.RuntimeClassName != nil:
		out.RuntimeClassName = *pod.RuntimeClassName
	case t.Spec.RuntimeClassName != nil:
		out.RuntimeClassName = *t.Spec.RuntimeClassName
	}
	if d := t.Spec.Lifecycle.IdleTimeout; d != nil && d.Duration > 0 {
		out.IdleTimeout = durationpb.New(d.Duration)
	}
	if d := t.Spec.Lifecycle.DefaultTTL; d != nil && d.Duration > 0 {
		out.DefaultTtl = durationpb.New(d.Duration)
	}
	return out
}

func poolToProto(p *v1alpha1.SandboxWarmPool) *sandpodv1.WarmPool {
	pending := p.Status.Replicas - p.Status.ReadyReplicas
	if pending < 0 {
		pending = 0
	}
	return &sandpodv1.WarmPool{
		Name: p.Name, Namespace: p.Namespace, Template: p.Spec.TemplateRef.Name,
		Replicas: p.Spec.Replicas, ReadyReplicas: p.Status.ReadyReplicas, PendingReplicas: pending,
	}
}
