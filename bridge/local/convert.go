package local

import (
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandpod/sandpod/core/api/protoconv"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/engine"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// sandboxToProto renders an engine sandbox for the API.
func sandboxToProto(s engine.Sandbox) *sandpodv1.Sandbox {
	out := &sandpodv1.Sandbox{
		Name:             s.Name,
		Namespace:        s.Namespace,
		Uid:              s.UID,
		Template:         s.Template,
		Pool:             s.Pool,
		Labels:           s.Labels,
		Phase:            protoconv.Phase(s.Phase),
		Message:          s.Message,
		CreateTime:       timestamppb.New(s.Created),
		ShutdownPolicy:   protoconv.Policy(s.ShutdownPolicy),
		LastActivityTime: timestamppb.New(s.LastActivity),
		Claimed:          s.Claimed,
		Conditions:       conditions(s),
		AgentRestarts:    s.AgentRestarts,
		Snapshot:         s.Snapshot,
		EnvKeys:          s.EnvKeys,
	}
	if s.ShutdownTime != nil {
		out.ShutdownTime = timestamppb.New(*s.ShutdownTime)
	}
	if s.Lease > 0 && s.LeaseExpires != nil {
		out.Lease, out.LeaseExpireTime = durationpb.New(s.Lease), timestamppb.New(*s.LeaseExpires)
	}
	if s.IdleTimeout > 0 {
		out.IdleTimeout = durationpb.New(s.IdleTimeout)
	}
	return out
}

func conditions(s engine.Sandbox) []*sandpodv1.Condition {
	phase := s.Phase
	cond := func(t string, on bool, reason string) *sandpodv1.Condition {
		st := "False"
		if on {
			st = "True"
		}
		return &sandpodv1.Condition{Type: t, Status: st, Reason: reason}
	}
	ready := cond(v1alpha1.ConditionReady, phase == v1alpha1.SandboxRunning, string(phase))
	ready.Message = s.Message
	return []*sandpodv1.Condition{
		ready,
		cond(v1alpha1.ConditionSuspended, phase == v1alpha1.SandboxSuspended, string(phase)),
		cond(v1alpha1.ConditionPaused, phase == v1alpha1.SandboxPaused, string(phase)),
		cond(v1alpha1.ConditionExpired, s.Expired, string(phase)),
		cond(v1alpha1.ConditionFinished, s.Expired || phase == v1alpha1.SandboxFailed, string(phase)),
	}
}

func sandboxesToProto(in []engine.Sandbox) []*sandpodv1.Sandbox {
	if in == nil {
		return nil
	}
	out := make([]*sandpodv1.Sandbox, len(in))
	for i, s := range in {
		out[i] = sandboxToProto(s)
	}
	return out
}

// snapshotToProto renders an engine snapshot: files of the workspace only.
func snapshotToProto(s engine.SnapshotInfo) *sandpodv1.Snapshot {
	out := &sandpodv1.Snapshot{
		Name: s.Name, Namespace: s.Namespace, Uid: s.UID, Labels: s.Labels,
		Phase: sandpodv1.SnapshotPhase_SNAPSHOT_PHASE_READY, SourceSandbox: s.Source, Template: s.Template,
		SizeBytes: s.Bytes, FileCount: s.Entries, Contents: sandpodv1.SnapshotContents_SNAPSHOT_CONTENTS_FILES,
		Volumes: []string{"workspace"}, Storage: s.Storage, CreateTime: timestamppb.New(s.Created),
		UsedBy: s.UsedBy, Skipped: s.Skipped, Message: s.Message,
	}
	if s.Failed {
		out.Phase = sandpodv1.SnapshotPhase_SNAPSHOT_PHASE_FAILED
	}
	return out
}

func templateToProto(t engine.Template) *sandpodv1.Template {
	out := &sandpodv1.Template{
		Name: t.Name, Namespace: t.Namespace, Image: t.Image, RuntimeClassName: t.RuntimeClass,
		ShutdownPolicy: protoconv.Policy(t.ShutdownPolicy), AutoResume: t.AutoResume,
		IdleAction:      protoconv.IdleAction(t.IdleAction),
		NetworkIsolated: t.NetworkIsolated, MemoryLimitBytes: t.MemoryBytes, CpuLimitMillis: t.CPUMillis, PidsLimit: t.PidsLimit,
		DiskLimitBytes: t.DiskBytes, InodeLimit: t.DiskInodes,
	}
	if t.IdleTimeout > 0 {
		out.IdleTimeout = durationpb.New(t.IdleTimeout)
	}
	if t.DefaultTTL > 0 {
		out.DefaultTtl = durationpb.New(t.DefaultTTL)
	}
	return out
}

func poolToProto(p engine.PoolStatus) *sandpodv1.WarmPool {
	return &sandpodv1.WarmPool{
		Name: p.Name, Namespace: p.Namespace, Template: p.Template, Replicas: p.Replicas,
		ReadyReplicas: p.Ready, PendingReplicas: p.Pending,
	}
}
