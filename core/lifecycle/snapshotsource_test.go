package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestSnapshotSource(t *testing.T) {
	now := metav1.Now()
	snap := func(phase v1alpha1.SnapshotPhase, tmpl string, deleting bool) *v1alpha1.SandboxSnapshot {
		s := &v1alpha1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "base"}}
		s.Status.Phase, s.Status.Template, s.Status.Message = phase, tmpl, "the driver said no"
		if deleting {
			s.DeletionTimestamp = &now
		}
		return s
	}
	labelled := snap(v1alpha1.SnapshotPending, "", false)
	labelled.Labels = map[string]string{v1alpha1.LabelTemplate: "from-label"}
	for _, tc := range []struct {
		name     string
		snap     *v1alpha1.SandboxSnapshot
		template string
		want     string
		why      SnapshotSourceWhy
		msg      string
	}{
		{name: "missing", snap: nil, template: "py", why: SnapshotSourceNotFound, msg: `snapshot "base" not found`},
		{name: "being deleted", snap: snap(v1alpha1.SnapshotReady, "py", true), why: SnapshotSourceNotFound},
		{name: "failed", snap: snap(v1alpha1.SnapshotFailed, "py", false), template: "py", why: SnapshotSourceFailed, msg: "the driver said no"},
		{name: "ready, template asked", snap: snap(v1alpha1.SnapshotReady, "py", false), template: "other", want: "other"},
		{name: "ready, snapshot's template", snap: snap(v1alpha1.SnapshotReady, "py", false), want: "py"},
		{name: "pending is accepted", snap: snap(v1alpha1.SnapshotPending, "py", false), want: "py"},
		{name: "no phase yet is accepted", snap: snap("", "py", false), want: "py"},
		{name: "template from the label", snap: labelled, want: "from-label"},
		{name: "no template known", snap: snap(v1alpha1.SnapshotReady, "", false), why: SnapshotSourceNoTemplate, msg: "name a template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, no := SnapshotSource("base", tc.snap, tc.template)
			if tc.why == 0 {
				if no != nil || got != tc.want {
					t.Fatalf("SnapshotSource = %q, %+v; want %q", got, no, tc.want)
				}
				return
			}
			if no == nil || no.Why != tc.why || got != "" || !strings.Contains(no.Message, tc.msg) {
				t.Fatalf("SnapshotSource = %q, %+v; want refusal %d containing %q", got, no, tc.why, tc.msg)
			}
		})
	}
}

func TestSnapshotVolumes(t *testing.T) {
	with := &v1alpha1.SandboxTemplateSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "workspace"}}}}
	if no := SnapshotVolumes("base", "py", with); no != nil {
		t.Errorf("a template with a volume: %+v", no)
	}
	no := SnapshotVolumes("base", "bare", &v1alpha1.SandboxTemplateSpec{})
	if no == nil || no.Why != SnapshotSourceNoVolumes || !strings.Contains(no.Message, `template "bare" has no volumes`) {
		t.Errorf("a template without volumes: %+v, want SnapshotSourceNoVolumes naming it", no)
	}
}
