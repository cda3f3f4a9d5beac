package lifecycle

import (
	"fmt"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// SnapshotSourceRefusal is why a sandbox cannot be made from a snapshot.
// The bridge answers it as a gRPC status (ClaimSandbox, CreateSandbox,
// ForkSandbox with a snapshot), a SandboxClaim with spec.snapshotRef as its
// Ready condition: the same decision, two ways of saying it.
type SnapshotSourceRefusal struct {
	Why     SnapshotSourceWhy
	Message string
}

// SnapshotSourceWhy names a refusal of a snapshot as a sandbox's source.
type SnapshotSourceWhy int

const (
	// SnapshotSourceNotFound: no such SandboxSnapshot in the namespace, or
	// it is being deleted (bridge: NOT_FOUND SNAPSHOT_NOT_FOUND).
	SnapshotSourceNotFound SnapshotSourceWhy = iota + 1
	// SnapshotSourceFailed: the snapshot failed and never will be ready
	// (bridge: FAILED_PRECONDITION SNAPSHOT_NOT_READY).
	SnapshotSourceFailed
	// SnapshotSourceNoTemplate: no template asked for, and the snapshot
	// does not know its source's (bridge: INVALID_ARGUMENT INVALID_NAME).
	SnapshotSourceNoTemplate
	// SnapshotSourceNoVolumes: the template has no volume claim templates,
	// so nothing of the snapshot would reach the sandbox (bridge:
	// FAILED_PRECONDITION SANDBOX_HAS_NO_VOLUMES).
	SnapshotSourceNoVolumes
)

// SnapshotSource decides the template of a sandbox made from snapshot
// name, whose object is snap (nil when it does not exist): the template
// asked for, else the snapshot's source's. A snapshot still being taken is
// accepted (the sandbox waits for its VolumeSnapshots: Ready reason
// SnapshotPending); a missing, deleted or failed one is refused.
func SnapshotSource(name string, snap *v1alpha1.SandboxSnapshot, template string) (string, *SnapshotSourceRefusal) {
	if snap == nil || snap.DeletionTimestamp != nil {
		return "", &SnapshotSourceRefusal{SnapshotSourceNotFound, fmt.Sprintf("snapshot %q not found", name)}
	}
	if snap.Status.Phase == v1alpha1.SnapshotFailed {
		return "", &SnapshotSourceRefusal{SnapshotSourceFailed, fmt.Sprintf("snapshot %q failed and cannot be used: %s", name, snap.Status.Message)}
	}
	if template == "" {
		template = SnapshotTemplate(snap)
	}
	if template == "" {
		return "", &SnapshotSourceRefusal{SnapshotSourceNoTemplate, fmt.Sprintf("snapshot %q does not know its source's template: name a template", name)}
	}
	return template, nil
}

// SnapshotTemplate is the template of a snapshot's source sandbox, as the
// controller recorded it (or the label it was made with); "" if unknown.
func SnapshotTemplate(s *v1alpha1.SandboxSnapshot) string {
	if s.Status.Template != "" {
		return s.Status.Template
	}
	return s.Labels[v1alpha1.LabelTemplate]
}

// SnapshotVolumes refuses a template without volume claim templates as
// the template of a sandbox from snapshot name: on Kubernetes a snapshot
// holds volumes only, and such a sandbox would silently start empty.
func SnapshotVolumes(name, template string, t *v1alpha1.SandboxTemplateSpec) *SnapshotSourceRefusal {
	if len(t.VolumeClaimTemplates) > 0 {
		return nil
	}
	return &SnapshotSourceRefusal{SnapshotSourceNoVolumes, fmt.Sprintf(
		"template %q has no volumes (volumeClaimTemplates): a sandbox from snapshot %q gets the snapshot's files only in volumes of the same names; give the template a workspace volume claim template", template, name)}
}
