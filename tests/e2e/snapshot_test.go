package e2e

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// snapshotTemplate is a Python template whose workspace is a volume of the
// node bed's CSI driver (StorageClass sandpod-csi: hack/testbed/csi.sh),
// which takes VolumeSnapshots and makes volumes from them.
func snapshotTemplate(ns, name string) *v1alpha1.SandboxTemplate {
	tmpl := WithVolume(Template(ns, name, PythonImage), "workspace", "/workspace")
	sc := "sandpod-csi"
	tmpl.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = &sc
	return tmpl
}

func readState(t *testing.T, sb *sandpod.Sandbox) string {
	t.Helper()
	got, err := sb.Files().ReadFile(Context(t), "state.txt")
	if err != nil {
		t.Fatalf("read state.txt in %s: %v", sb.Name(), err)
	}
	return string(got)
}

// TestSnapshotForkRestore runs snapshots for real: a sandbox's workspace
// (a CSI volume) is snapshotted; 4 forks each see its file and write their
// own without touching the others; a SandboxClaim from the snapshot sees
// its file; a fork put back to the snapshot sees the
// snapshot's file again, in a new pod with the same name; the snapshot
// cannot be deleted while the forks use it, and goes with its
// VolumeSnapshot once they are gone.
func TestSnapshotForkRestore(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, snapshotTemplate(ns, "snap"))
	c := env.bridgeClient(t, ns)
	ctx := Context(t)

	src, err := c.Create(ctx, "snap", sandpod.WithName("src"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Files().WriteFile(ctx, "state.txt", []byte("set up once")); err != nil {
		t.Fatal(err)
	}
	// A synced file: the driver copies the volume's directory.
	if res, err := src.Run(ctx, "sync"); err != nil || res.ExitCode != 0 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	snap, err := src.Snapshot(ctx, sandpod.WithName("base"))
	if err != nil {
		t.Fatal(err)
	}
	info := snap.Info()
	if info.Phase != "Ready" || info.Storage != "hostpath.csi.sandpod.dev" {
		t.Fatalf("snapshot = %+v, want READY on the bed's CSI driver", info)
	}

	forks, err := c.Fork(ctx, snap, 4)
	if err != nil {
		env.Diagnose(t, ns)
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(forks.Sandboxes))
	for i, sb := range forks.Sandboxes {
		wg.Go(func() {
			got, err := sb.Files().ReadFile(ctx, "state.txt")
			if err == nil && string(got) != "set up once" {
				err = fmt.Errorf("fork %s sees %q", sb.Name(), got)
			}
			if err == nil {
				_, err = sb.Files().WriteFile(ctx, "state.txt", []byte("episode of "+sb.Name()))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, sb := range forks.Sandboxes {
		if got := readState(t, sb); got != "episode of "+sb.Name() {
			t.Errorf("fork %s reads %q: forks must not share a volume", sb.Name(), got)
		}
	}
	if got := readState(t, src); got != "set up once" {
		t.Errorf("the source reads %q after its forks wrote theirs", got)
	}

	// A SandboxClaim from the snapshot (the kubectl path; no pool of forks
	// here, so cold): its volume starts as the snapshot's.
	claim := &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-base"},
		Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: "snap"}, SnapshotRef: &v1alpha1.ClaimSnapshotRef{Name: "base"}},
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "claim from-base ready", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)
		return err == nil && claim.Status.SandboxName != "" && meta.IsStatusConditionTrue(claim.Status.Conditions, v1alpha1.ConditionReady), fmt.Sprint(claim.Status, err)
	})
	claimed, err := c.Get(ctx, claim.Status.SandboxName)
	if err != nil {
		t.Fatal(err)
	}
	if got := readState(t, claimed); got != "set up once" {
		t.Errorf("the claim's sandbox reads %q, want the snapshot's %q", got, "set up once")
	}

	// Restore a fork: the snapshot's file again, same name, new pod.
	fork := forks.Sandboxes[0]
	before := env.Pod(t, env.WaitSandboxReady(t, ns, fork.Name()))
	if err := fork.Restore(ctx, snap); err != nil {
		env.Diagnose(t, ns)
		t.Fatal(err)
	}
	if got := readState(t, fork); got != "set up once" {
		t.Errorf("restored fork reads %q, want the snapshot's %q", got, "set up once")
	}
	after := env.Pod(t, env.WaitSandboxReady(t, ns, fork.Name()))
	if after.UID == before.UID || after.Name != fork.Name() {
		t.Errorf("restore: pod %s/%s, before %s/%s; want a new pod of the same name", after.Name, after.UID, before.Name, before.UID)
	}

	// In use: refused; the VolumeSnapshot stays until the users go.
	err = snap.Delete(ctx)
	if !errors.Is(err, sandpod.ErrSnapshotInUse) {
		t.Fatalf("delete of a snapshot in use: %v, want ErrSnapshotInUse", err)
	}
	if err := forks.DeleteAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "the snapshot's users to be gone", func() (bool, string) {
		err := snap.Delete(ctx)
		return err == nil || errors.Is(err, sandpod.ErrSnapshotNotFound), fmt.Sprint(err)
	})
	env.Eventually(t, "the SandboxSnapshot and its VolumeSnapshot to be deleted", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "base"}, &v1alpha1.SandboxSnapshot{})
		out, kerr := env.RunKubectl(ctx, "-n", ns, "get", "volumesnapshots", "-o", "name")
		return err != nil && strings.Contains(err.Error(), "not found") && kerr == nil && strings.TrimSpace(out) == "", fmt.Sprint(err, out, kerr)
	})
	var pvcs corev1.PersistentVolumeClaimList
	_ = env.Client.List(ctx, &pvcs, client.InNamespace(ns))
	t.Logf("PVCs left in %s: %d", ns, len(pvcs.Items))
}
