package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/fieldindex"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Snapshots on Kubernetes are SandboxSnapshot objects: the controller
// takes a CSI VolumeSnapshot of each volume of the source sandbox
// (core/controller/snapshot), sandboxes made from one get PVCs whose
// dataSource is that VolumeSnapshot, and a restore gives the sandbox new
// PVCs from it (a new restore mark in spec.snapshotRef). A snapshot holds
// the sandbox's volumes only: not its memory, root filesystem or network.

func snapshotKey(ns, name string) string { return "snapshot/" + ns + "/" + name }

// SnapshotSandbox creates a SandboxSnapshot of a sandbox's volumes and
// waits until the CSI driver has taken it (or the call's deadline nears:
// then it answers the snapshot as it stands, PENDING). A retry with the
// same request id returns the same snapshot.
func (b *Backend) SnapshotSandbox(ctx context.Context, req *sandpodv1.SnapshotSandboxRequest) (*sandpodv1.Snapshot, error) {
	if req.GetIncludeMemory() {
		return nil, errinfo.New(codes.Unimplemented, errinfo.ReasonMemorySnapshotUnsupported, nil,
			"on Kubernetes a snapshot holds the sandbox's volumes (CSI VolumeSnapshots), not the memory of its processes: leave include_memory unset")
	}
	ns := nsOr(req.GetNamespace())
	snap, err := b.takeSnapshot(ctx, ns, req.GetSandbox(), req.GetName(), req.GetLabels(), req.GetRequestId())
	if err != nil {
		return nil, err
	}
	return b.waitSnapshot(ctx, snap)
}

// takeSnapshot creates the SandboxSnapshot (or finds the one the request
// id made).
func (b *Backend) takeSnapshot(ctx context.Context, ns, source, name string, lbls map[string]string, requestID string) (*v1alpha1.SandboxSnapshot, error) {
	sb, err := b.sandbox(ctx, ns, source)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallSuspend, sb); err != nil {
		return nil, err // an unclaimed pool member: claim it first
	}
	if len(sb.Spec.VolumeClaimTemplates) == 0 {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxHasNoVolumes,
			"sandbox %q has no volumes to snapshot: on Kubernetes a snapshot holds a sandbox's volumes (CSI VolumeSnapshots of its PVCs); give its template %q a workspace volumeClaimTemplate",
			source, templateOf(sb))
	}
	snap := &v1alpha1.SandboxSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:       v1alpha1.SandboxSnapshotSpec{SourceSandbox: source},
	}
	for k, v := range lbls {
		snap.Labels[k] = v
	}
	if t := templateOf(sb); t != "" {
		snap.Labels[v1alpha1.LabelTemplate] = t
	}
	if requestID != "" {
		snap.Annotations = map[string]string{v1alpha1.AnnotationRequestID: requestID}
		if name == "" {
			snap.Name = objectMeta(ns, snapPrefix(source), requestID).Name
		}
	}
	if snap.Name == "" {
		snap.GenerateName = snapPrefix(source) + "-"
	}
	err = b.client.Create(ctx, snap)
	if apierrors.IsAlreadyExists(err) {
		existing := &v1alpha1.SandboxSnapshot{}
		if requestID != "" && b.live.Get(ctx, client.ObjectKeyFromObject(snap), existing) == nil &&
			existing.Annotations[v1alpha1.AnnotationRequestID] == requestID {
			return existing, nil // a retry of the request that made it
		}
		return nil, errinfo.Newf(codes.AlreadyExists, errinfo.ReasonSnapshotExists, "snapshot %q already exists in namespace %q", snap.Name, ns)
	}
	if err != nil {
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
			return nil, errinfo.SnapshotQuota(ns, fmt.Sprintf("namespace %q is at its quota of snapshots (a ResourceQuota on sandboxsnapshots.sandpod.dev or volumesnapshots): delete some first: %v", ns, err))
		}
		return nil, apiError(err, "create snapshot of %q", source)
	}
	return snap, nil
}

// snapPrefix names a new snapshot after its source: <source>-snap, short
// enough for a generated suffix and for its VolumeSnapshots' names.
func snapPrefix(source string) string {
	if len(source) > 40 {
		source = strings.TrimRight(source[:40], "-")
	}
	return source + "-snap"
}

func templateOf(sb *v1alpha1.Sandbox) string {
	if sb.Spec.TemplateRef != nil {
		return sb.Spec.TemplateRef.Name
	}
	return ""
}

// waitSnapshot waits for a snapshot to be Ready; a failed one is an error,
// and one still pending when the deadline nears is answered as it is.
func (b *Backend) waitSnapshot(ctx context.Context, snap *v1alpha1.SandboxSnapshot) (*sandpodv1.Snapshot, error) {
	ctx, cancel := answerBeforeDeadline(ctx)
	defer cancel()
	woken, stop := b.hub.listen(snapshotKey(snap.Namespace, snap.Name))
	defer stop()
	last := snap
	for {
		cur := &v1alpha1.SandboxSnapshot{}
		err := b.client.Get(ctx, client.ObjectKeyFromObject(snap), cur)
		switch {
		case apierrors.IsNotFound(err):
			// not in the cache yet (or deleted: the next event says)
		case err != nil:
			return nil, apiError(err, "read snapshot %q", snap.Name)
		case cur.UID != snap.UID && snap.UID != "":
			return nil, errinfo.Newf(codes.Aborted, errinfo.ReasonSnapshotNotFound, "snapshot %q was deleted while it was being taken", snap.Name)
		default:
			last = cur
			switch cur.Status.Phase {
			case v1alpha1.SnapshotReady:
				return b.snapshotToProto(ctx, cur), nil
			case v1alpha1.SnapshotFailed:
				return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSnapshotNotReady, "snapshot %q failed: %s", cur.Name, cur.Status.Message)
			}
		}
		select {
		case <-woken:
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				return nil, waitError(ctx, "snapshot "+snap.Name, "")
			}
			return b.snapshotToProto(context.WithoutCancel(ctx), last), nil
		}
	}
}

// snapshotObj reads a snapshot from the cache; a deleted one is gone.
func (b *Backend) snapshotObj(ctx context.Context, ns, name string) (*v1alpha1.SandboxSnapshot, error) {
	snap := &v1alpha1.SandboxSnapshot{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, snap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, errinfo.SnapshotNotFound(ns, name)
		}
		return nil, apiError(err, "read snapshot %q", name)
	}
	if snap.DeletionTimestamp != nil {
		return nil, errinfo.SnapshotNotFound(ns, name)
	}
	return snap, nil
}

// GetSnapshot returns one snapshot.
func (b *Backend) GetSnapshot(ctx context.Context, ns, name string) (*sandpodv1.Snapshot, error) {
	snap, err := b.snapshotObj(ctx, nsOr(ns), name)
	if err != nil {
		return nil, err
	}
	return b.snapshotToProto(ctx, snap), nil
}

// ListSnapshots returns the matching snapshots of a namespace, by name.
func (b *Backend) ListSnapshots(ctx context.Context, ns string, sel labels.Selector) ([]*sandpodv1.Snapshot, error) {
	var list v1alpha1.SandboxSnapshotList
	if err := b.client.List(ctx, &list, client.InNamespace(nsOr(ns))); err != nil {
		return nil, apiError(err, "list snapshots")
	}
	out := make([]*sandpodv1.Snapshot, 0, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		if s.DeletionTimestamp == nil && (sel == nil || sel.Matches(labels.Set(s.Labels))) {
			out = append(out, b.snapshotToProto(ctx, s))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteSnapshot deletes a snapshot nothing uses. Its finalizer keeps it
// (and its VolumeSnapshots) should a sandbox start using it meanwhile.
func (b *Backend) DeleteSnapshot(ctx context.Context, ns, name string) error {
	ns = nsOr(ns)
	snap, err := b.snapshotObj(ctx, ns, name)
	if err != nil {
		return err
	}
	users, err := b.snapshotUsers(ctx, ns, name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return errinfo.SnapshotInUse(ns, name, users)
	}
	if err := b.client.Delete(ctx, snap, client.Preconditions{UID: &snap.UID}); err != nil && !apierrors.IsNotFound(err) {
		return apiError(err, "delete snapshot %q", name)
	}
	return nil
}

// snapshotUsers are the sandboxes and pools that keep a snapshot.
func (b *Backend) snapshotUsers(ctx context.Context, ns, name string) ([]string, error) {
	users, err := fieldindex.SnapshotUsers(ctx, b.client, ns, name)
	if err != nil {
		return nil, apiError(err, "list the users of snapshot %q", name)
	}
	return users, nil
}

// fromSnapshot resolves the snapshot and template of a create, claim or
// fork: no snapshot, the template asked for; else the shared decision
// (lifecycle.SnapshotSource, as a SandboxClaim with spec.snapshotRef
// decides): the snapshot must exist and not have failed, the template is
// the one asked for, else the snapshot's, and it must have volumes.
func (b *Backend) fromSnapshot(ctx context.Context, ns, snapshot, template string) (string, *v1alpha1.SandboxTemplate, error) {
	if snapshot == "" {
		tmpl, err := b.template(ctx, ns, template)
		return "", tmpl, err
	}
	snap := &v1alpha1.SandboxSnapshot{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: snapshot}, snap); apierrors.IsNotFound(err) {
		snap = nil
	} else if err != nil {
		return "", nil, apiError(err, "read snapshot %q", snapshot)
	}
	template, no := lifecycle.SnapshotSource(snapshot, snap, template)
	if no == nil {
		tmpl, err := b.template(ctx, ns, template)
		if err != nil {
			return "", nil, err
		}
		if no = lifecycle.SnapshotVolumes(snapshot, tmpl.Name, &tmpl.Spec); no == nil {
			return snapshot, tmpl, nil
		}
	}
	switch no.Why {
	case lifecycle.SnapshotSourceNotFound:
		return "", nil, errinfo.SnapshotNotFound(ns, snapshot)
	case lifecycle.SnapshotSourceFailed:
		return "", nil, errinfo.New(codes.FailedPrecondition, errinfo.ReasonSnapshotNotReady, nil, no.Message)
	case lifecycle.SnapshotSourceNoVolumes:
		return "", nil, errinfo.New(codes.FailedPrecondition, errinfo.ReasonSandboxHasNoVolumes, nil, no.Message)
	default:
		return "", nil, errinfo.Invalid(errinfo.ReasonInvalidName, "template", "%s", no.Message)
	}
}

func snapshotTemplate(s *v1alpha1.SandboxSnapshot) string { return lifecycle.SnapshotTemplate(s) }

// ForkSandbox makes count sandboxes whose volumes start from a snapshot:
// ready members of a pool of forks of it first, then new sandboxes. From a
// sandbox, an implicit snapshot is taken first. Sandbox i of a request id
// carries id#i, so a retry finds each one again and makes none more.
func (b *Backend) ForkSandbox(ctx context.Context, req *sandpodv1.ForkSandboxRequest) ([]*sandpodv1.Sandbox, *sandpodv1.Snapshot, error) {
	ns, rid := nsOr(req.GetNamespace()), req.GetRequestId()
	snapName := req.GetSnapshot()
	if req.GetSandbox() != "" {
		srid := ""
		if rid != "" {
			srid = rid + "#snapshot"
		}
		s, err := b.takeSnapshot(ctx, ns, req.GetSandbox(), "", map[string]string{v1alpha1.LabelForkOf: req.GetSandbox()}, srid)
		if err != nil {
			return nil, nil, err
		}
		snapName = s.Name
	}
	snapName, tmpl, err := b.fromSnapshot(ctx, ns, snapName, req.GetTemplate())
	if err != nil {
		return nil, nil, err
	}
	now := b.now()
	lc := lifecycle.ClaimLifecycle(now, requestLifecycle(now, req.GetTtl(), nil, req.GetShutdownPolicy()), tmpl.Spec.Lifecycle)
	env := envVars(req.GetEnv())
	restart := lifecycle.RestartOnFailure(nil, tmpl.Spec.RestartOnFailure)
	made := make([]*sandpodv1.Sandbox, req.GetCount())
	for i := range made {
		id := ""
		if rid != "" {
			id = fmt.Sprintf("%s#%d", rid, i)
			// Forks are claims of the snapshot (a warm fork is adopted like
			// a claimed member), so their ids are recorded as claims.
			if sb, err := b.byRequestID(ctx, ns, id, methodClaim); err != nil {
				return nil, nil, err
			} else if sb != nil {
				made[i] = sandboxToProto(sb, b.clusterDomain)
				continue
			}
		}
		release, err := b.admit(ctx, ns, tmpl.Name)
		if err != nil {
			return nil, nil, err
		}
		h := adopt.Holder{Labels: req.GetLabels(), Env: env, Lifecycle: lc, RequestID: id, RestartOnFailure: restart}
		sb, err := b.adopt(ctx, tmpl, snapName, h, nil)
		if err != nil {
			release("")
			return nil, nil, err
		}
		if sb != nil {
			release(sb.Name)
			made[i] = sandboxToProto(sb, b.clusterDomain)
			continue
		}
		if made[i], err = b.createFromTemplate(ctx, tmpl, snapName, "", requestOf(id, methodClaim), req.GetLabels(), env, lc, true, restart, nil, release, func() {}); err != nil {
			return nil, nil, err
		}
	}
	if !req.GetNoWait() {
		for i, sb := range made {
			if made[i], err = b.waitRunning(ctx, ns, sb.Name, types.UID(sb.Uid)); err != nil {
				return nil, nil, err
			}
		}
	}
	snap, err := b.snapshotObj(ctx, ns, snapName)
	if err != nil {
		return nil, nil, err
	}
	return made, b.snapshotToProto(ctx, snap), nil
}

// RestoreSandbox puts a sandbox's volumes back to a snapshot: a new
// restore mark in its spec.snapshotRef makes the controller replace its pod
// and PVCs (same names) with PVCs from the snapshot. Name, labels, env,
// shutdown time and agent secret stay; a suspended sandbox stays suspended.
func (b *Backend) RestoreSandbox(ctx context.Context, req *sandpodv1.RestoreSandboxRequest) (*sandpodv1.Sandbox, error) {
	ns, name := nsOr(req.GetNamespace()), req.GetName()
	sb, err := b.sandbox(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if sb, err = b.reach(ctx, lifecycle.CallSuspend, sb); err != nil { // what may stop it may restore it
		return nil, err
	}
	if phaseOf(sb) == v1alpha1.SandboxExpired {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxExpired, "sandbox %q has expired; extend it first", name)
	}
	snap, err := b.snapshotObj(ctx, ns, req.GetSnapshot())
	if err != nil {
		return nil, err
	}
	if snap.Status.Phase != v1alpha1.SnapshotReady {
		msg := snap.Status.Message
		if msg == "" {
			msg = "it is still being taken"
		}
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSnapshotNotReady, "snapshot %q cannot be restored from yet: %s", snap.Name, msg)
	}
	if !sharesVolume(sb, snap) {
		return nil, errinfo.Newf(codes.FailedPrecondition, errinfo.ReasonSandboxHasNoVolumes,
			"sandbox %q has no volume that snapshot %q holds (it holds %s): restore puts volumes back, so the sandbox needs a volume claim template of the same name",
			name, snap.Name, volumeNames(snap))
	}
	mark, err := newRestoreMark()
	if err != nil {
		return nil, errinfo.Newf(codes.Internal, errinfo.ReasonSnapshotCopyFailed, "restore mark: %v", err)
	}
	// The caller's intent whatever else changed: no resourceVersion.
	if err := b.patchSpec(ctx, sb, map[string]any{"snapshotRef": map[string]any{"name": snap.Name, "restore": mark}}); err != nil {
		return nil, sandboxError(err, ns, name, "restore sandbox %q", name)
	}
	if req.GetNoWait() || sb.Spec.OperatingMode == v1alpha1.OperatingModeSuspended {
		return sandboxToProto(sb, b.clusterDomain), nil
	}
	return b.waitRestored(ctx, sb)
}

// waitRestored waits until the controller has seen the restore (its
// status observes the new generation) and the sandbox runs again.
func (b *Backend) waitRestored(ctx context.Context, sb *v1alpha1.Sandbox) (*sandpodv1.Sandbox, error) {
	ctx, cancel := answerBeforeDeadline(ctx)
	defer cancel()
	woken, stop := b.hub.listen(sandboxKey(sb.Namespace, sb.Name))
	defer stop()
	gen, last := sb.Generation, ""
	for {
		cur := &v1alpha1.Sandbox{}
		err := b.client.Get(ctx, client.ObjectKeyFromObject(sb), cur)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, apiError(err, "read sandbox %q", sb.Name)
		case cur.UID != sb.UID || cur.DeletionTimestamp != nil:
			return nil, errinfo.SandboxGone(sb.Namespace, sb.Name, fmt.Sprintf("sandbox %q was deleted while it was being restored", sb.Name))
		case cur.Status.ObservedGeneration >= gen:
			last = describe(cur)
			switch phaseOf(cur) {
			case v1alpha1.SandboxRunning:
				return sandboxToProto(cur, b.clusterDomain), nil
			case v1alpha1.SandboxFailed:
				return nil, errinfo.Newf(codes.Unavailable, errinfo.ReasonSandboxStartFailed, "sandbox %q failed to start after the restore: %s", sb.Name, cur.Status.Message)
			}
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, waitError(ctx, "sandbox "+sb.Name+" (restore)", last)
		}
	}
}

func sharesVolume(sb *v1alpha1.Sandbox, snap *v1alpha1.SandboxSnapshot) bool {
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		for _, v := range snap.Status.Volumes {
			if v.Name == vct.Name {
				return true
			}
		}
	}
	return false
}

func volumeNames(snap *v1alpha1.SandboxSnapshot) string {
	names := make([]string, 0, len(snap.Status.Volumes))
	for _, v := range snap.Status.Volumes {
		names = append(names, v.Name)
	}
	if len(names) == 0 {
		return "no volume"
	}
	return strings.Join(names, ", ")
}

func newRestoreMark() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// snapshotToProto is the API's view of a SandboxSnapshot, with its users.
func (b *Backend) snapshotToProto(ctx context.Context, s *v1alpha1.SandboxSnapshot) *sandpodv1.Snapshot {
	out := &sandpodv1.Snapshot{
		Name: s.Name, Namespace: s.Namespace, Uid: string(s.UID), Labels: s.Labels,
		Message: s.Status.Message, SourceSandbox: s.Spec.SourceSandbox, Template: snapshotTemplate(s),
		Contents: sandpodv1.SnapshotContents_SNAPSHOT_CONTENTS_FILES,
		Storage:  s.Status.Driver,
	}
	switch s.Status.Phase {
	case v1alpha1.SnapshotReady:
		out.Phase = sandpodv1.SnapshotPhase_SNAPSHOT_PHASE_READY
	case v1alpha1.SnapshotFailed:
		out.Phase = sandpodv1.SnapshotPhase_SNAPSHOT_PHASE_FAILED
	default:
		out.Phase = sandpodv1.SnapshotPhase_SNAPSHOT_PHASE_PENDING
	}
	if out.Storage == "" {
		out.Storage = "csi"
	}
	for _, v := range s.Status.Volumes {
		out.Volumes = append(out.Volumes, v.Name)
		if v.RestoreSize != nil {
			out.SizeBytes += v.RestoreSize.Value()
		}
	}
	if !s.CreationTimestamp.IsZero() {
		out.CreateTime = timestamppb.New(s.CreationTimestamp.Time)
	}
	if users, err := b.snapshotUsers(ctx, s.Namespace, s.Name); err == nil {
		out.UsedBy = users
	}
	return out
}
