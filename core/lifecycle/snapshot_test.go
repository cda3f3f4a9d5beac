package lifecycle

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestSnapshotPhase(t *testing.T) {
	ready := VolumeSnapshotState{Exists: true, ReadyToUse: true}
	pending := VolumeSnapshotState{Exists: true}
	cases := []struct {
		name string
		vols map[string]VolumeSnapshotState
		want v1alpha1.SnapshotPhase
		msg  string
	}{
		{"none yet", nil, v1alpha1.SnapshotPending, "no volume snapshot"},
		{"all ready", map[string]VolumeSnapshotState{"workspace": ready, "data": ready}, v1alpha1.SnapshotReady, ""},
		{"one pending", map[string]VolumeSnapshotState{"workspace": ready, "data": pending}, v1alpha1.SnapshotPending, "data"},
		{"one failed wins over pending", map[string]VolumeSnapshotState{"a": pending, "b": {Exists: true, Error: "no space"}}, v1alpha1.SnapshotFailed, "volume b: no space"},
		{"vanished", map[string]VolumeSnapshotState{"workspace": {}}, v1alpha1.SnapshotFailed, "gone"},
	}
	for _, c := range cases {
		got, msg := SnapshotPhase(c.vols)
		if got != c.want || !strings.Contains(msg, c.msg) || (c.msg == "" && msg != "") {
			t.Errorf("%s: got %s %q, want %s %q", c.name, got, msg, c.want, c.msg)
		}
	}
}

func TestDecideRestore(t *testing.T) {
	cases := []struct {
		name string
		want string
		pvcs []PVCMark
		pod  bool
		step RestoreStep
	}{
		{"no volumes", "r1", nil, true, RestoreNone},
		{"all current", "r1", []PVCMark{{Mark: "r1"}, {Mark: "r1"}}, true, RestoreNone},
		{"fork never restored", "", []PVCMark{{Mark: ""}}, true, RestoreNone},
		{"stale under a pod", "r2", []PVCMark{{Mark: "r1"}}, true, RestoreStopPod},
		{"stale, pod gone", "r2", []PVCMark{{Mark: "r1"}, {Mark: "r2"}}, false, RestoreDeleteVolumes},
		{"first restore of a cold sandbox", "r1", []PVCMark{{Mark: ""}}, false, RestoreDeleteVolumes},
		{"one deleting, one not yet", "r2", []PVCMark{{Mark: "r1", Deleting: true}, {Mark: "r1"}}, false, RestoreDeleteVolumes},
		{"all stale deleting", "r2", []PVCMark{{Mark: "r1", Deleting: true}, {Mark: "r2"}}, false, RestoreWait},
	}
	for _, c := range cases {
		if got := DecideRestore(c.want, c.pvcs, c.pod); got != c.step {
			t.Errorf("%s: got %d, want %d", c.name, got, c.step)
		}
	}
}

func TestRestoreRequest(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	cases := []struct {
		want, size *resource.Quantity
		out        string
	}{
		{q("1Gi"), nil, "1Gi"},
		{q("1Gi"), q("512Mi"), "1Gi"},
		{q("1Gi"), q("2Gi"), "2Gi"},
		{nil, q("2Gi"), "2Gi"},
		{q("1Gi"), q("0"), "1Gi"},
	}
	for _, c := range cases {
		if got := RestoreRequest(c.want, c.size); got.String() != c.out {
			t.Errorf("RestoreRequest(%v, %v) = %v, want %s", c.want, c.size, got, c.out)
		}
	}
}

func TestPoolHash(t *testing.T) {
	h := TemplateHash(map[string]string{"a": "b"})
	if PoolHash(h, "") != h {
		t.Error("a pool without a snapshot must keep the template hash (existing members stay current)")
	}
	a, b := PoolHash(h, "s1"), PoolHash(h, "s2")
	if a == h || a == b || len(a) != len(h) {
		t.Errorf("snapshot pools must hash apart from the template and each other: %s %s %s", h, a, b)
	}
}

func TestSnapshotUsers(t *testing.T) {
	now := metav1.Now()
	sb := func(name, snap string, deleting bool) *v1alpha1.Sandbox {
		s := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if snap != "" {
			s.Spec.SnapshotRef = &v1alpha1.SnapshotRef{Name: snap}
		}
		if deleting {
			s.DeletionTimestamp = &now
		}
		return s
	}
	pool := func(name, snap string) *v1alpha1.SandboxWarmPool {
		return &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SandboxWarmPoolSpec{Snapshot: snap}}
	}
	got := SnapshotUsers("s",
		[]*v1alpha1.Sandbox{sb("b", "s", false), sb("a", "s", false), sb("gone", "s", true), sb("other", "t", false), sb("cold", "", false)},
		[]*v1alpha1.SandboxWarmPool{pool("p", "s"), pool("q", "")})
	want := []string{"pool/p", "sandbox/a", "sandbox/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := SnapshotUsers("s", nil, nil); len(got) != 0 {
		t.Errorf("nobody: got %v", got)
	}
}
