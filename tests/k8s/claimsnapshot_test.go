package k8s_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/errinfo"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// claimFrom is a SandboxClaim of template whose sandbox starts from snapshot.
func claimFrom(ns, name, template, snapshot string) *v1alpha1.SandboxClaim {
	c := makeClaim(ns, name, template)
	c.Spec.SnapshotRef = &v1alpha1.ClaimSnapshotRef{Name: snapshot}
	return c
}

// takenSnapshot makes SandboxSnapshot name of sandbox src and plays the
// snapshot-controller: its workspace VolumeSnapshot is ready to use.
func takenSnapshot(t *testing.T, ns, name, src string) {
	t.Helper()
	create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: src}})
	snapshotTaken(t, ns, name+"-workspace", "1Gi")
	waitSnapshotReady(t, ns, name)
}

func waitSnapshotReady(t *testing.T, ns, name string) {
	t.Helper()
	s := &v1alpha1.SandboxSnapshot{}
	harness.Eventually(t, harness.Timeout, "snapshot "+name+" Ready", func() (bool, string) {
		err := env.Get(s, ns, name)
		return err == nil && s.Status.Phase == v1alpha1.SnapshotReady, fmt.Sprint(s.Status, err)
	})
}

// waitClaimRefused waits for a claim's Ready condition to carry reason,
// and checks it bound no sandbox.
func waitClaimRefused(t *testing.T, ns, name, reason, msg string) {
	t.Helper()
	c := &v1alpha1.SandboxClaim{}
	harness.Eventually(t, harness.Timeout, "claim "+name+" refused with "+reason, func() (bool, string) {
		_ = env.Get(c, ns, name)
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == reason && strings.Contains(cond.Message, msg), fmt.Sprintf("%+v", c.Status)
	})
	if c.Status.SandboxName != "" {
		t.Errorf("refused claim %s holds sandbox %s", name, c.Status.SandboxName)
	}
	if err := env.Get(&v1alpha1.Sandbox{}, ns, name); !isNotFound(err) {
		t.Errorf("refused claim %s made a sandbox: %v", name, err)
	}
}

// A SandboxClaim with spec.snapshotRef: with no pool of forks, a sandbox
// made cold from the snapshot; with one, a warm fork taken from it, never
// by a claim of the template alone. The claims' sandboxes keep the snapshot
// (its finalizer) until the claims go.
func TestSandboxClaimFromSnapshot(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, snapTemplate(ns, "py"), makeClaim(ns, "src", "py"))
	releaseDeletedPVCs(t, ns)
	waitClaimReady(t, ns, "src")
	takenSnapshot(t, ns, "base", "src")

	// No pool of forks: cold, with the snapshot as its volumes' source.
	create(t, claimFrom(ns, "cold", "py", "base"))
	cold := waitClaimReady(t, ns, "cold")
	if cold.Status.Warm {
		t.Errorf("claim cold was served warm without a pool of forks: %+v", cold.Status)
	}
	sb := &v1alpha1.Sandbox{}
	if err := env.Get(sb, ns, cold.Status.SandboxName); err != nil {
		t.Fatal(err)
	}
	if sb.Spec.SnapshotRef == nil || sb.Spec.SnapshotRef.Name != "base" || sb.Labels[v1alpha1.LabelSnapshot] != "base" {
		t.Errorf("cold sandbox %s: snapshotRef %v labels %v, want base", sb.Name, sb.Spec.SnapshotRef, sb.Labels)
	}
	wantFromSnapshot(t, ns, sb.Name, "base-workspace", "1Gi")

	// A pool of forks: a claim from the snapshot takes one warm; a plain
	// claim of the template does not.
	pool := makePool(ns, "forks", "py", 1)
	pool.Spec.Snapshot = "base"
	create(t, pool)
	members := waitPoolReady(t, ns, "forks", 1, "")
	create(t, makeClaim(ns, "plain", "py"))
	if plain := waitClaimReady(t, ns, "plain"); plain.Status.Warm || plain.Status.SandboxName == members[0].Name {
		t.Errorf("a claim without a snapshot took fork %s: %+v", members[0].Name, plain.Status)
	}
	create(t, claimFrom(ns, "warm", "py", "base"))
	warm := waitClaimReady(t, ns, "warm")
	if !warm.Status.Warm || warm.Status.SandboxName != members[0].Name {
		t.Errorf("claim from the snapshot: %+v, want warm fork %s", warm.Status, members[0].Name)
	}
	if err := env.Get(sb, ns, warm.Status.SandboxName); err != nil {
		t.Fatal(err)
	}
	if sb.Spec.SnapshotRef == nil || sb.Spec.SnapshotRef.Name != "base" || sb.Annotations[v1alpha1.AnnotationFromPool] != "forks" || sb.Labels[v1alpha1.LabelClaim] != "warm" {
		t.Errorf("warm fork %s: snapshotRef %v annotations %v labels %v", sb.Name, sb.Spec.SnapshotRef, sb.Annotations, sb.Labels)
	}

	// The snapshot is kept while the claims' sandboxes use it.
	if err := env.Client.Delete(ctx, pool); err != nil {
		t.Fatal(err)
	}
	snap := &v1alpha1.SandboxSnapshot{}
	if err := env.Get(snap, ns, "base"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, snap); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, harness.Timeout, "the deleted snapshot kept by the claims' sandboxes", func() (bool, string) {
		err := env.Get(snap, ns, "base")
		c := meta.FindStatusCondition(snap.Status.Conditions, v1alpha1.ConditionReady)
		return err == nil && c != nil && c.Reason == "InUse" &&
			strings.Contains(c.Message, "sandbox/"+cold.Status.SandboxName) && strings.Contains(c.Message, "sandbox/"+warm.Status.SandboxName), fmt.Sprint(err, c)
	})
	for _, n := range []string{"cold", "warm"} {
		if err := env.Client.Delete(ctx, &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, &v1alpha1.SandboxSnapshot{}, ns, "base")
}

// What a SandboxClaim from a snapshot refuses, as conditions (the bridge's
// answers), and what the API server refuses: a snapshot that is missing
// (the claim binds once it is made), failed, or a template without volumes;
// a snapshot in another namespace, or a snapshotRef changed, added or
// removed.
func TestSandboxClaimSnapshotRefusals(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, snapTemplate(ns, "py"), makeTemplate(ns, "bare"), makeClaim(ns, "src", "py"), makeClaim(ns, "novol", "bare"))
	waitClaimReady(t, ns, "src")
	waitClaimReady(t, ns, "novol")

	create(t, claimFrom(ns, "missing", "py", "later"))
	waitClaimRefused(t, ns, "missing", v1alpha1.ReasonSnapshotNotFound, `snapshot "later" not found`)

	create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: "novol"}})
	bad := &v1alpha1.SandboxSnapshot{}
	harness.Eventually(t, harness.Timeout, "snapshot bad Failed", func() (bool, string) {
		err := env.Get(bad, ns, "bad")
		return err == nil && bad.Status.Phase == v1alpha1.SnapshotFailed, fmt.Sprint(bad.Status, err)
	})
	create(t, claimFrom(ns, "failed", "py", "bad"))
	waitClaimRefused(t, ns, "failed", v1alpha1.ReasonSnapshotNotReady, `snapshot "bad" failed`)

	takenSnapshot(t, ns, "base", "src")
	create(t, claimFrom(ns, "novolumes", "bare", "base"))
	waitClaimRefused(t, ns, "novolumes", v1alpha1.ReasonSandboxHasNoVolumes, `template "bare" has no volumes`)

	// The bridge's ClaimSandbox decides alike, as gRPC errors.
	api := startBridge(t, ns)
	for _, tc := range []struct {
		snapshot, template string
		why                errinfo.Why
	}{
		{"later", "py", errinfo.ReasonSnapshotNotFound},
		{"bad", "py", errinfo.ReasonSnapshotNotReady},
		{"base", "bare", errinfo.ReasonSandboxHasNoVolumes},
	} {
		_, err := api.ClaimSandbox(callCtx(t), &pb.ClaimSandboxRequest{Snapshot: tc.snapshot, Template: tc.template, Namespace: ns})
		wantWhy(t, err, tc.why)
	}

	// The missing snapshot made now: the waiting claim binds (a snapshot
	// still being taken is accepted; its sandbox's volumes come from it).
	create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: "src"}})
	c := &v1alpha1.SandboxClaim{}
	harness.Eventually(t, harness.Timeout, "claim missing bound once its snapshot exists", func() (bool, string) {
		_ = env.Get(c, ns, "missing")
		return c.Status.SandboxName != "", fmt.Sprintf("%+v", c.Status)
	})
	waitSandbox(t, ns, c.Status.SandboxName, "made from snapshot later", func(sb *v1alpha1.Sandbox) bool {
		return sb.Spec.SnapshotRef != nil && sb.Spec.SnapshotRef.Name == "later"
	})
	wantFromSnapshot(t, ns, c.Status.SandboxName, "later-workspace", "1Gi")

	// The API server's refusals: no namespace in the reference, and the
	// reference is fixed once the claim is made.
	other := claimFrom(ns, "elsewhere", "py", "base")
	u, err := toUnstructured(other)
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "other-namespace", "spec", "snapshotRef", "namespace")
	err = env.Client.Create(ctx, u, client.FieldValidation("Strict"))
	if err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a claim naming a snapshot of another namespace: %v, want an unknown field refusal", err)
	}
	for _, tc := range []struct{ name, claim, patch string }{
		{"changed", "missing", `{"spec":{"snapshotRef":{"name":"base"}}}`},
		{"removed", "missing", `{"spec":{"snapshotRef":null}}`},
		{"added", "src", `{"spec":{"snapshotRef":{"name":"base"}}}`},
	} {
		cl := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.claim}}
		err := env.Client.Patch(ctx, cl, client.RawPatch(types.MergePatchType, []byte(tc.patch)))
		if err == nil || !strings.Contains(err.Error(), "snapshotRef is immutable") {
			t.Errorf("snapshotRef %s: %v, want refused as immutable", tc.name, err)
		}
	}
}

func toUnstructured(o client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind("SandboxClaim")
	return u, nil
}

// snapshotReadyAfterFlip makes n snapshots of src one after the other and
// returns, for each, the time from its VolumeSnapshot becoming ready to use
// to the SandboxSnapshot being Ready. Each is flipped only once the
// controller has read its VolumeSnapshot as not ready (and is waiting).
func snapshotReadyAfterFlip(t *testing.T, ns, src string, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		create(t, &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.SandboxSnapshotSpec{SourceSandbox: src}})
		s := &v1alpha1.SandboxSnapshot{}
		harness.Eventually(t, harness.Timeout, "snapshot "+name+" waiting for its VolumeSnapshot", func() (bool, string) {
			err := env.Get(s, ns, name)
			return err == nil && s.Status.Phase == v1alpha1.SnapshotPending && len(s.Status.Volumes) == 1 &&
				strings.Contains(s.Status.Message, "CSI driver"), fmt.Sprint(s.Status, err)
		})
		start := time.Now()
		snapshotTaken(t, ns, name+"-workspace", "1Gi")
		waitSnapshotReady(t, ns, name)
		out = append(out, time.Since(start))
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// A change of a VolumeSnapshot wakes its SandboxSnapshot: with the safety
// recheck at 10 minutes, each snapshot is Ready well within the test's
// 60 s bound once its VolumeSnapshot is ready to use.
func TestVolumeSnapshotWatchWakesSnapshot(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: controller.Options{SnapshotRecheck: 10 * time.Minute}})
	create(t, snapTemplate(ns, "py"), makeClaim(ns, "src", "py"))
	waitClaimReady(t, ns, "src")
	ds := snapshotReadyAfterFlip(t, ns, "src", 5)
	t.Logf("watched VolumeSnapshots: readyToUse -> SandboxSnapshot Ready: median %v, all %v", median(ds), ds)
}

// Without watching VolumeSnapshots (a cluster without the CSI snapshot
// CRDs at start), the controller polls them: still Ready.
func TestVolumeSnapshotPollFallback(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: controller.Options{SnapshotNoWatch: true}})
	create(t, snapTemplate(ns, "py"), makeClaim(ns, "src", "py"))
	waitClaimReady(t, ns, "src")
	ds := snapshotReadyAfterFlip(t, ns, "src", 5)
	t.Logf("polled VolumeSnapshots (every %v): readyToUse -> SandboxSnapshot Ready: median %v, all %v", 2*time.Second, median(ds), ds)
}
