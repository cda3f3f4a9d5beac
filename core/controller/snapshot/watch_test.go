package snapshot

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestOwnerOfVolumeSnapshot(t *testing.T) {
	ctl, no := true, false
	vs := func(refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "base-workspace", OwnerReferences: refs}}
	}
	ours := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxSnapshot", Name: "base", UID: "u", Controller: &ctl}
	for _, tc := range []struct {
		name string
		obj  *metav1.PartialObjectMetadata
		want string
	}{
		{name: "made by a SandboxSnapshot", obj: vs(ours), want: "base"},
		{name: "no owner", obj: vs()},
		{name: "owned but not controlled", obj: vs(metav1.OwnerReference{APIVersion: ours.APIVersion, Kind: ours.Kind, Name: "base", Controller: &no})},
		{name: "another group's kind of that name", obj: vs(metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "SandboxSnapshot", Name: "base", Controller: &ctl})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OwnerOfVolumeSnapshot(context.Background(), tc.obj)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("mapped to %v, want nothing", got)
			case tc.want != "" && (len(got) != 1 || got[0].Name != tc.want || got[0].Namespace != "ns"):
				t.Errorf("mapped to %v, want ns/%s", got, tc.want)
			}
		})
	}
}

func TestVolumeSnapshotServed(t *testing.T) {
	with := meta.NewDefaultRESTMapper(nil)
	with.Add(schema.GroupVersionKind{Group: SnapshotGroup, Version: "v1", Kind: "VolumeSnapshot"}, meta.RESTScopeNamespace)
	if ok, err := VolumeSnapshotServed(with); !ok || err != nil {
		t.Errorf("served: %v %v, want true", ok, err)
	}
	if ok, err := VolumeSnapshotServed(meta.NewDefaultRESTMapper(nil)); ok || err != nil {
		t.Errorf("not served: %v %v, want false without an error", ok, err)
	}
}
