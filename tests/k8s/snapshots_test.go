package k8s_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// kwok has no CSI driver and no snapshot-controller: these tests check the
// objects sandpod makes (SandboxSnapshot, VolumeSnapshot, PVCs whose
// dataSource is it, the finalizer), and play the snapshot-controller's part
// (readyToUse) and the pvc-protection controller's (a deleted PVC goes
// once no pod uses it) themselves. tests/e2e runs the same on a real CSI
// driver (TestSnapshot*).

var volumeSnapshotGVK = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshot"}

// snapTemplate is a template whose sandboxes have a 1Gi workspace volume.
func snapTemplate(ns, name string) *v1alpha1.SandboxTemplate {
	t := makeTemplate(ns, name)
	t.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "workspace"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	return t
}

// waitVolumeSnapshot waits for a VolumeSnapshot to exist and returns it.
func waitVolumeSnapshot(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(volumeSnapshotGVK)
	harness.Eventually(t, harness.Timeout, "VolumeSnapshot "+name, func() (bool, string) {
		err := env.Get(u, ns, name)
		return err == nil, fmt.Sprint(err)
	})
	return u
}

// snapshotTaken plays the snapshot-controller: the VolumeSnapshot is ready
// to use, restorable into volumes of at least size.
func snapshotTaken(t *testing.T, ns, name, size string) {
	t.Helper()
	u := waitVolumeSnapshot(t, ns, name)
	body := fmt.Sprintf(`{"status":{"readyToUse":true,"restoreSize":%q,"boundVolumeSnapshotContentName":"snapcontent-%s"}}`, size, u.GetUID())
	if err := env.Client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		t.Fatalf("mark VolumeSnapshot %s ready: %v", name, err)
	}
}

// releaseDeletedPVCs plays kube-controller-manager's pvc-protection
// controller, which kwok lacks: a PVC being deleted loses its finalizer once
// no pod of the namespace mounts it.
func releaseDeletedPVCs(t *testing.T, ns string) {
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for c.Err() == nil {
			var pvcs corev1.PersistentVolumeClaimList
			var pods corev1.PodList
			if env.Client.List(c, &pvcs, client.InNamespace(ns)) == nil && env.Client.List(c, &pods, client.InNamespace(ns)) == nil {
				for i := range pvcs.Items {
					pvc := &pvcs.Items[i]
					if pvc.DeletionTimestamp != nil && len(pvc.Finalizers) > 0 && !mounted(pods.Items, pvc.Name) {
						_ = env.Client.Patch(c, pvc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
					}
				}
			}
			select {
			case <-c.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

func mounted(pods []corev1.Pod, claim string) bool {
	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				return true
			}
		}
	}
	return false
}

// wantFromSnapshot checks that a sandbox's workspace PVC starts from the
// VolumeSnapshot vs, at least as large as the snapshot, and returns it.
func wantFromSnapshot(t *testing.T, ns, sandbox, vs, size string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	harness.Eventually(t, harness.Timeout, "PVC of "+sandbox+" from "+vs, func() (bool, string) {
		if err := env.Get(pvc, ns, "workspace-"+sandbox); err != nil {
			return false, err.Error()
		}
		ds := pvc.Spec.DataSource
		return ds != nil && ds.Kind == "VolumeSnapshot" && ds.Name == vs && pvc.DeletionTimestamp == nil, fmt.Sprintf("dataSource=%+v", ds)
	})
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse(size)) != 0 {
		t.Errorf("PVC %s requests %s, want the snapshot's restore size %s", pvc.Name, got.String(), size)
	}
	return pvc
}

// A snapshot through the bridge is a SandboxSnapshot with a finalizer and a
// VolumeSnapshot of the workspace PVC; forks get PVCs whose dataSource is
// that VolumeSnapshot; a restore replaces the sandbox's pod and PVC (same
// names, same agent identity) with a PVC from it; a snapshot in use is
// refused by DeleteSnapshot and kept by its finalizer until its users go.
func TestSnapshotForkRestoreOnKubernetes(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, snapTemplate(ns, "py"))
	releaseDeletedPVCs(t, ns)
	api := startBridge(t, ns)
	c := callCtx(t)

	if _, err := api.CreateSandbox(c, &pb.CreateSandboxRequest{Template: "py", Namespace: ns, Name: "src"}); err != nil {
		t.Fatal(err)
	}
	// Without a CSI driver the snapshot stays PENDING: the call answers it
	// as it stands when its deadline nears.
	short, cancel := context.WithTimeout(c, 3*time.Second)
	defer cancel()
	req := &pb.SnapshotSandboxRequest{Sandbox: "src", Namespace: ns, Name: "s1", Labels: map[string]string{"run": "a"}, RequestId: "snap-1"}
	first, err := api.SnapshotSandbox(short, req)
	if err != nil {
		t.Fatal(err)
	}
	if s := first.GetSnapshot(); s.GetPhase() != pb.SnapshotPhase_SNAPSHOT_PHASE_PENDING || s.GetSourceSandbox() != "src" || s.GetTemplate() != "py" || s.GetLabels()["run"] != "a" {
		t.Errorf("snapshot = %v, want PENDING of src (template py, label run=a)", s)
	}
	vs := waitVolumeSnapshot(t, ns, "s1-workspace")
	if pvc, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "persistentVolumeClaimName"); pvc != "workspace-src" {
		t.Errorf("VolumeSnapshot source PVC %q, want workspace-src", pvc)
	}
	if refs := vs.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "SandboxSnapshot" || refs[0].Name != "s1" {
		t.Errorf("VolumeSnapshot owners %v, want SandboxSnapshot s1", refs)
	}
	snap := &v1alpha1.SandboxSnapshot{}
	if err := env.Get(snap, ns, "s1"); err != nil || !slices.Contains(snap.Finalizers, v1alpha1.SnapshotFinalizer) {
		t.Errorf("SandboxSnapshot s1: finalizers %v (%v), want %s", snap.Finalizers, err, v1alpha1.SnapshotFinalizer)
	}
	short2, cancel2 := context.WithTimeout(c, 3*time.Second)
	defer cancel2()
	again, err := api.SnapshotSandbox(short2, req)
	if err != nil || again.GetSnapshot().GetUid() != first.GetSnapshot().GetUid() {
		t.Errorf("a retry with the same request id: %v (%v), want snapshot %s again", again.GetSnapshot(), err, first.GetSnapshot().GetUid())
	}
	_, err = api.RestoreSandbox(c, &pb.RestoreSandboxRequest{Name: "src", Namespace: ns, Snapshot: "s1"})
	wantCode(t, err, codes.FailedPrecondition, "restore to a snapshot still being taken")
	wantWhy(t, err, errinfo.ReasonSnapshotNotReady)

	snapshotTaken(t, ns, "s1-workspace", "2Gi")
	harness.Eventually(t, harness.Timeout, "snapshot s1 READY", func() (bool, string) {
		got, err := api.GetSnapshot(c, &pb.GetSnapshotRequest{Name: "s1", Namespace: ns})
		s := got.GetSnapshot()
		return err == nil && s.GetPhase() == pb.SnapshotPhase_SNAPSHOT_PHASE_READY, fmt.Sprint(s, err)
	})
	got, _ := api.GetSnapshot(c, &pb.GetSnapshotRequest{Name: "s1", Namespace: ns})
	if s := got.GetSnapshot(); s.GetSizeBytes() != 2<<30 || !slices.Equal(s.GetVolumes(), []string{"workspace"}) || s.GetContents() != pb.SnapshotContents_SNAPSHOT_CONTENTS_FILES {
		t.Errorf("ready snapshot = %v, want 2 GiB, volumes [workspace], files only", s)
	}

	// Forks: PVCs from the VolumeSnapshot; a retry makes none more.
	forkReq := &pb.ForkSandboxRequest{Snapshot: "s1", Namespace: ns, Count: 3, RequestId: "fork-1", Labels: map[string]string{"episode": "1"}}
	forks, err := api.ForkSandbox(c, forkReq)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sb := range forks.GetSandboxes() {
		names = append(names, sb.GetName())
		if sb.GetPhase() != pb.Phase_PHASE_RUNNING || sb.GetLabels()["episode"] != "1" {
			t.Errorf("fork %s: phase %s labels %v", sb.GetName(), sb.GetPhase(), sb.GetLabels())
		}
		wantFromSnapshot(t, ns, sb.GetName(), "s1-workspace", "2Gi")
	}
	retry, err := api.ForkSandbox(c, forkReq)
	if err != nil {
		t.Fatal(err)
	}
	for i, sb := range retry.GetSandboxes() {
		if sb.GetName() != names[i] {
			t.Errorf("retried fork %d is %s, first call made %s", i, sb.GetName(), names[i])
		}
	}
	all, _ := api.ListSandboxes(c, &pb.ListSandboxesRequest{Namespace: ns})
	if len(all.GetSandboxes()) != 4 {
		t.Errorf("%d sandboxes after a retried fork of 3, want 4", len(all.GetSandboxes()))
	}

	// In use: DeleteSnapshot refuses and names the users.
	_, err = api.DeleteSnapshot(c, &pb.DeleteSnapshotRequest{Name: "s1", Namespace: ns})
	wantCode(t, err, codes.FailedPrecondition, "delete of a snapshot in use")
	wantWhy(t, err, errinfo.ReasonSnapshotInUse)
	if !strings.Contains(errinfo.Metadata(err)["users"], "sandbox/"+names[0]) {
		t.Errorf("users %q, want sandbox/%s among them", errinfo.Metadata(err)["users"], names[0])
	}

	// Restore the source: new pod and PVC, same names and agent identity.
	oldPod, oldPVC := &corev1.Pod{}, &corev1.PersistentVolumeClaim{}
	if err := env.Get(oldPod, ns, "src"); err != nil {
		t.Fatal(err)
	}
	if err := env.Get(oldPVC, ns, "workspace-src"); err != nil {
		t.Fatal(err)
	}
	restored, err := api.RestoreSandbox(c, &pb.RestoreSandboxRequest{Name: "src", Namespace: ns, Snapshot: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if restored.GetSandbox().GetPhase() != pb.Phase_PHASE_RUNNING || restored.GetSandbox().GetName() != "src" {
		t.Errorf("restored = %v, want src running", restored.GetSandbox())
	}
	newPVC := wantFromSnapshot(t, ns, "src", "s1-workspace", "2Gi")
	sb := &v1alpha1.Sandbox{}
	_ = env.Get(sb, ns, "src")
	if newPVC.UID == oldPVC.UID || newPVC.Annotations[v1alpha1.AnnotationRestore] != sb.Spec.SnapshotRef.Restore || sb.Spec.SnapshotRef.Restore == "" {
		t.Errorf("restored PVC uid %s (old %s), mark %q, sandbox's %q: want a new PVC with the sandbox's mark", newPVC.UID, oldPVC.UID, newPVC.Annotations[v1alpha1.AnnotationRestore], sb.Spec.SnapshotRef.Restore)
	}
	newPod := &corev1.Pod{}
	if err := env.Get(newPod, ns, "src"); err != nil || newPod.UID == oldPod.UID {
		t.Errorf("pod after restore: uid %s (old %s) %v, want a new pod", newPod.UID, oldPod.UID, err)
	}
	if want := "--sandbox-uid " + string(sb.UID); !strings.Contains(strings.Join(newPod.Spec.Containers[0].Command, " "), want) {
		t.Errorf("pod after restore: agent command %v, want %q (the identity kept)", newPod.Spec.Containers[0].Command, want)
	}

	// kubectl delete of a snapshot in use: kept by the finalizer.
	if err := env.Client.Delete(ctx, snap); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "the deleted snapshot to say it is in use", func() (bool, string) {
		err := env.Get(snap, ns, "s1")
		c := meta.FindStatusCondition(snap.Status.Conditions, v1alpha1.ConditionReady)
		return err == nil && snap.DeletionTimestamp != nil && c != nil && c.Reason == "InUse", fmt.Sprint(err, c)
	})
	waitVolumeSnapshot(t, ns, "s1-workspace")
	for _, n := range append(names, "src") {
		if _, err := api.DeleteSandbox(c, &pb.DeleteSandboxRequest{Name: n, Namespace: ns}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, &v1alpha1.SandboxSnapshot{}, ns, "s1")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(volumeSnapshotGVK)
	waitGone(t, u, ns, "s1-workspace")
}

// A pool naming a snapshot keeps forks of it: members' PVCs start from its
// VolumeSnapshot; a claim from the snapshot takes one warm, a claim of the
// template alone never does; the pool keeps the snapshot in use.
func TestSnapshotPoolOfForks(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, snapTemplate(ns, "py"))
	api := startBridge(t, ns)
	c := callCtx(t)
	if _, err := api.CreateSandbox(c, &pb.CreateSandboxRequest{Template: "py", Namespace: ns, Name: "src"}); err != nil {
		t.Fatal(err)
	}
	create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: "src"}})
	snapshotTaken(t, ns, "base-workspace", "1Gi")

	pool := makePool(ns, "forks", "py", 2)
	pool.Spec.Snapshot = "base"
	create(t, pool)
	members := waitPoolReady(t, ns, "forks", 2, "")
	for _, m := range members {
		if m.Spec.SnapshotRef == nil || m.Spec.SnapshotRef.Name != "base" {
			t.Errorf("member %s snapshotRef %v, want base", m.Name, m.Spec.SnapshotRef)
		}
		wantFromSnapshot(t, ns, m.Name, "base-workspace", "1Gi")
	}
	plain, err := api.ClaimSandbox(c, &pb.ClaimSandboxRequest{Template: "py", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if plain.GetWarm() {
		t.Errorf("a claim without a snapshot took fork %s of the pool", plain.GetSandbox().GetName())
	}
	fork, err := api.ClaimSandbox(c, &pb.ClaimSandboxRequest{Snapshot: "base", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if !fork.GetWarm() || fork.GetSandbox().GetPool() != "forks" {
		t.Errorf("claim from the snapshot = warm %v pool %q, want a warm fork of pool forks", fork.GetWarm(), fork.GetSandbox().GetPool())
	}
	_, err = api.DeleteSnapshot(c, &pb.DeleteSnapshotRequest{Name: "base", Namespace: ns})
	wantWhy(t, err, errinfo.ReasonSnapshotInUse)
	if !strings.Contains(errinfo.Metadata(err)["users"], "pool/forks") {
		t.Errorf("users %q, want pool/forks among them", errinfo.Metadata(err)["users"])
	}
}

// What a Kubernetes snapshot cannot be: of a sandbox without volumes, with
// memory; a SandboxSnapshot of such a sandbox fails and says why; a
// sandbox from a snapshot that is not there is refused.
func TestSnapshotRefusalsOnKubernetes(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeTemplate(ns, "bare"), snapTemplate(ns, "py"))
	api := startBridge(t, ns)
	c := callCtx(t)
	if _, err := api.CreateSandbox(c, &pb.CreateSandboxRequest{Template: "bare", Namespace: ns, Name: "novol"}); err != nil {
		t.Fatal(err)
	}
	_, err := api.SnapshotSandbox(c, &pb.SnapshotSandboxRequest{Sandbox: "novol", Namespace: ns})
	wantCode(t, err, codes.FailedPrecondition, "snapshot of a sandbox without volumes")
	wantWhy(t, err, errinfo.ReasonSandboxHasNoVolumes)
	_, err = api.SnapshotSandbox(c, &pb.SnapshotSandboxRequest{Sandbox: "novol", Namespace: ns, IncludeMemory: true})
	wantCode(t, err, codes.Unimplemented, "snapshot with memory")
	wantWhy(t, err, errinfo.ReasonMemorySnapshotUnsupported)
	_, err = api.GetSnapshot(c, &pb.GetSnapshotRequest{Name: "nope", Namespace: ns})
	wantWhy(t, err, errinfo.ReasonSnapshotNotFound)
	_, err = api.ClaimSandbox(c, &pb.ClaimSandboxRequest{Snapshot: "nope", Namespace: ns})
	wantWhy(t, err, errinfo.ReasonSnapshotNotFound)
	_, err = api.ForkSandbox(c, &pb.ForkSandboxRequest{Snapshot: "nope", Namespace: ns, Count: 2})
	wantWhy(t, err, errinfo.ReasonSnapshotNotFound)

	create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: "novol"}})
	s := &v1alpha1.SandboxSnapshot{}
	harness.Eventually(t, harness.Timeout, "a snapshot of a sandbox without volumes to fail", func() (bool, string) {
		err := env.Get(s, ns, "bad")
		return err == nil && s.Status.Phase == v1alpha1.SnapshotFailed && strings.Contains(s.Status.Message, "no volumes"), fmt.Sprint(s.Status, err)
	})
	// A sandbox whose claim template names someone else's PVC: that PVC is
	// never snapshotted (its data would reach whoever forks it).
	create(t, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workspace-victim"},
		Spec:       snapTemplate(ns, "x").Spec.VolumeClaimTemplates[0].Spec,
	})
	victim := makeSandbox(ns, "victim")
	victim.Spec.VolumeClaimTemplates = snapTemplate(ns, "x").Spec.VolumeClaimTemplates
	create(t, victim, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steal"}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: "victim"}})
	harness.Eventually(t, harness.Timeout, "a snapshot of a PVC the sandbox does not own to fail", func() (bool, string) {
		err := env.Get(s, ns, "steal")
		return err == nil && s.Status.Phase == v1alpha1.SnapshotFailed && strings.Contains(s.Status.Message, "not sandbox"), fmt.Sprint(s.Status, err)
	})
	vs := &unstructured.Unstructured{}
	vs.SetGroupVersionKind(volumeSnapshotGVK)
	if err := env.Get(vs, ns, "steal-workspace"); !isNotFound(err) {
		t.Errorf("a VolumeSnapshot of the foreign PVC: %v", err)
	}

	_, err = api.ForkSandbox(c, &pb.ForkSandboxRequest{Snapshot: "bad", Namespace: ns, Template: "py", Count: 1})
	wantWhy(t, err, errinfo.ReasonSnapshotNotReady)
	// A failed snapshot nothing uses goes at once.
	if _, err := api.DeleteSnapshot(c, &pb.DeleteSnapshotRequest{Name: "bad", Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &v1alpha1.SandboxSnapshot{}, ns, "bad")
}
