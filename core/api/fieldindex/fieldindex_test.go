package fieldindex

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apischeme "github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func sandbox(name, snapshot string) *v1alpha1.Sandbox {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if snapshot != "" {
		sb.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: snapshot}
	}
	return sb
}

func TestSnapshotOfSandbox(t *testing.T) {
	cases := map[string]struct {
		sb   *v1alpha1.Sandbox
		want []string
	}{
		"from a snapshot": {sandbox("a", "base"), []string{"base"}},
		"from a template": {sandbox("b", ""), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SnapshotOfSandbox(tc.sb); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SnapshotOfSandbox = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSnapshotUsers(t *testing.T) {
	scheme, err := apischeme.New()
	if err != nil {
		t.Fatal(err)
	}
	pool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "forks"}}
	pool.Spec.Snapshot = "base"
	other := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	elsewhere := sandbox("far", "base")
	elsewhere.Namespace = "other"
	objs := []client.Object{sandbox("a", "base"), sandbox("b", "other"), sandbox("c", ""), elsewhere, pool, other}
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&v1alpha1.Sandbox{}, SandboxSnapshot, SnapshotOfSandbox).WithObjects(objs...).Build()
	cases := map[string][]string{
		"base":  {"pool/forks", "sandbox/a"},
		"other": {"sandbox/b"},
		"none":  nil,
	}
	for snap, want := range cases {
		got, err := SnapshotUsers(context.Background(), c, "ns", snap)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("SnapshotUsers(%s) = %v, want %v", snap, got, want)
		}
	}
}
