package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Snapshot decisions shared by the Kubernetes controller and bridge: what
// state a SandboxSnapshot is in, who keeps it, and the steps of a restore.

// VolumeSnapshotState is what the controller reads of one CSI VolumeSnapshot.
type VolumeSnapshotState struct {
	// Exists is false while the VolumeSnapshot is not (or no longer) there.
	Exists bool
	// ReadyToUse mirrors status.readyToUse.
	ReadyToUse bool
	// Error is status.error.message, if the snapshotter reported one.
	Error string
}

// SnapshotPhase sums up the VolumeSnapshots of a SandboxSnapshot: Failed
// when one failed (with its error) or vanished after it was made, Ready when
// all are ready to use, else Pending with what it waits for.
func SnapshotPhase(vols map[string]VolumeSnapshotState) (v1alpha1.SnapshotPhase, string) {
	if len(vols) == 0 {
		return v1alpha1.SnapshotPending, "no volume snapshot made yet"
	}
	names := make([]string, 0, len(vols))
	for n := range vols {
		names = append(names, n)
	}
	sort.Strings(names)
	var waiting []string
	for _, n := range names {
		v := vols[n]
		switch {
		case v.Error != "":
			return v1alpha1.SnapshotFailed, fmt.Sprintf("volume %s: %s", n, v.Error)
		case !v.Exists:
			return v1alpha1.SnapshotFailed, fmt.Sprintf("the VolumeSnapshot of volume %s is gone", n)
		case !v.ReadyToUse:
			waiting = append(waiting, n)
		}
	}
	if len(waiting) > 0 {
		return v1alpha1.SnapshotPending, "waiting for the CSI driver to snapshot volume(s) " + strings.Join(waiting, ", ")
	}
	return v1alpha1.SnapshotReady, ""
}

// RestoreStep is the next thing a restore of a sandbox's volumes needs.
type RestoreStep int

const (
	// RestoreNone: every PVC carries the sandbox's restore mark (or does
	// not exist yet and will be made with it).
	RestoreNone RestoreStep = iota
	// RestoreStopPod: a PVC is stale and the pod still mounts it.
	RestoreStopPod
	// RestoreDeleteVolumes: the pod is gone; delete the stale PVCs.
	RestoreDeleteVolumes
	// RestoreWait: the stale PVCs are being deleted.
	RestoreWait
)

// PVCMark is what a restore looks at on an existing PVC of a sandbox.
type PVCMark struct {
	// Mark is the PVC's restore annotation ("" when made without one).
	Mark string
	// Deleting is set once its deletion began.
	Deleting bool
}

// DecideRestore says what a sandbox whose restore mark is want does next
// with its PVCs: none stale, nothing; otherwise its pod goes first (a PVC
// cannot be replaced under a mounting pod), then the stale PVCs, and the
// reconciler makes them again from the snapshot once they are gone.
func DecideRestore(want string, pvcs []PVCMark, podExists bool) RestoreStep {
	stale, deleting := 0, 0
	for _, p := range pvcs {
		if p.Mark != want {
			stale++
			if p.Deleting {
				deleting++
			}
		}
	}
	switch {
	case stale == 0:
		return RestoreNone
	case podExists:
		return RestoreStopPod
	case deleting < stale:
		return RestoreDeleteVolumes
	default:
		return RestoreWait
	}
}

// RestoreMark is the restore mark a sandbox's PVCs must carry.
func RestoreMark(sb *v1alpha1.Sandbox) string {
	if sb.Spec.SnapshotRef == nil {
		return ""
	}
	return sb.Spec.SnapshotRef.Restore
}

// RestoreRequest is the storage request of a PVC made from a volume
// snapshot: the claim template's, raised to the snapshot's restore size
// (a CSI driver refuses a volume smaller than the snapshot).
func RestoreRequest(want, restoreSize *resource.Quantity) *resource.Quantity {
	switch {
	case restoreSize == nil || restoreSize.IsZero():
		return want
	case want == nil || want.Cmp(*restoreSize) < 0:
		q := restoreSize.DeepCopy()
		return &q
	default:
		return want
	}
}

// PoolHash is the hash warm pool members carry: the template's hash, or
// for a pool of forks the template's and the snapshot's together, so that
// naming another snapshot rolls the members and a claim from a snapshot
// takes only members with its files.
func PoolHash(templateHash, snapshot string) string {
	if snapshot == "" {
		return templateHash
	}
	sum := sha256.Sum256([]byte(templateHash + "\x00" + snapshot))
	return hex.EncodeToString(sum[:])[:len(templateHash)]
}

// SnapshotUsers lists who keeps a snapshot: the sandboxes made from it (or
// restored to it) that are not being deleted, and the pools that name it,
// as "sandbox/NAME" and "pool/NAME", sorted.
func SnapshotUsers(snapshot string, sandboxes []*v1alpha1.Sandbox, pools []*v1alpha1.SandboxWarmPool) []string {
	var out []string
	for _, sb := range sandboxes {
		if sb.DeletionTimestamp == nil && sb.Spec.SnapshotRef != nil && sb.Spec.SnapshotRef.Name == snapshot {
			out = append(out, "sandbox/"+sb.Name)
		}
	}
	for _, p := range pools {
		if p.DeletionTimestamp == nil && p.Spec.Snapshot == snapshot {
			out = append(out, "pool/"+p.Name)
		}
	}
	sort.Strings(out)
	return out
}
