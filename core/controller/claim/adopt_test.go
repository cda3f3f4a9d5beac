package claim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func TestBind(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	truth := true
	member := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{
		Name: "pool-abc", Namespace: "ns",
		Labels:          map[string]string{v1alpha1.LabelPool: "pool", v1alpha1.LabelTemplateHash: "h"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "SandboxWarmPool", Name: "pool", UID: "pool-uid", Controller: &truth}},
	}}
	c := &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "claim-uid", Annotations: map[string]string{v1alpha1.AnnotationRequestID: "req-1"}},
		Spec: v1alpha1.SandboxClaimSpec{
			Labels: map[string]v1alpha1.LabelValue{"team": "rl"},
			Env:    []corev1.EnvVar{{Name: "A", Value: "1"}},
		},
	}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "py"}}
	tmpl.Spec.Lifecycle.DefaultTTL = &metav1.Duration{Duration: time.Hour}

	Bind(member, c, tmpl, now)
	if _, ok := member.Labels[v1alpha1.LabelPool]; ok {
		t.Errorf("pool label kept")
	}
	if member.Annotations[v1alpha1.AnnotationFromPool] != "pool" {
		t.Errorf("from-pool annotation = %q, want the pool it was adopted from", member.Annotations[v1alpha1.AnnotationFromPool])
	}
	if member.Labels[v1alpha1.LabelClaim] != "c" || member.Labels["team"] != "rl" || member.Annotations[v1alpha1.AnnotationRequestID] != "req-1" {
		t.Errorf("labels/annotations = %v %v", member.Labels, member.Annotations)
	}
	if !IsBoundTo(member, c) || len(member.OwnerReferences) != 1 {
		t.Errorf("owners = %+v", member.OwnerReferences)
	}
	if member.Spec.Lifecycle.ShutdownTime == nil || !member.Spec.Lifecycle.ShutdownTime.Time.Equal(now.Add(time.Hour)) {
		t.Errorf("shutdown = %v", member.Spec.Lifecycle.ShutdownTime)
	}
	if len(member.Spec.Env) != 1 {
		t.Errorf("env = %v", member.Spec.Env)
	}
	cold := ColdSandbox(c, tmpl, now)
	if cold.Name != "c" || !IsBoundTo(cold, c) || cold.Spec.TemplateRef.Name != "py" {
		t.Errorf("cold = %+v", cold.ObjectMeta)
	}
	if _, ok := cold.Annotations[v1alpha1.AnnotationFromPool]; ok {
		t.Errorf("a cold sandbox names a pool: %v", cold.Annotations)
	}
}

func TestComputeStatusAndTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ttl := int32(30)
	c := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 2}, Spec: v1alpha1.SandboxClaimSpec{TTLSecondsAfterFinished: &ttl}}
	readySB := &v1alpha1.Sandbox{Status: v1alpha1.SandboxStatus{Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}}}

	cases := map[string]struct {
		view         claimView
		wantReady    bool
		wantFinished bool
		wantDueAfter time.Duration // 0: not finished
	}{
		"warm and ready":  {view: claimView{Name: "sb", Sandbox: readySB, Warm: true, Adopted: true}, wantReady: true},
		"sandbox gone":    {view: claimView{Name: "sb", Gone: true}, wantFinished: true, wantDueAfter: 30 * time.Second},
		"template absent": {view: claimView{Problem: "x", PReason: v1alpha1.ReasonTemplateNotFound}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.view.Now = now
			st := ComputeStatus(c, tc.view)
			gotReady, gotFin := false, false
			for _, cond := range st.Conditions {
				if cond.Type == v1alpha1.ConditionReady {
					gotReady = cond.Status == metav1.ConditionTrue
				}
				if cond.Type == v1alpha1.ConditionFinished {
					gotFin = cond.Status == metav1.ConditionTrue
				}
				if cond.ObservedGeneration != 2 {
					t.Errorf("%s observedGeneration = %d", cond.Type, cond.ObservedGeneration)
				}
			}
			if gotReady != tc.wantReady || gotFin != tc.wantFinished {
				t.Errorf("ready=%v finished=%v, want %v %v", gotReady, gotFin, tc.wantReady, tc.wantFinished)
			}
			due, wait := TTLDue(c, st, now)
			if due || wait != tc.wantDueAfter {
				t.Errorf("TTLDue now = %v, %s; want false, %s", due, wait, tc.wantDueAfter)
			}
			if tc.wantFinished {
				if due, _ := TTLDue(c, st, now.Add(31*time.Second)); !due {
					t.Errorf("TTL not due after it passed")
				}
			}
		})
	}
}

// TestNotReadyMessage: a cold sandbox without a status yet and one whose
// first status says Pending give the claim the same message, so that first
// status costs the claim no write.
func TestNotReadyMessage(t *testing.T) {
	c := &v1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	cases := map[string]struct {
		phase v1alpha1.SandboxPhase
		msg   string
		want  string
	}{
		"no status yet": {want: "sandbox phase Pending"},
		"pending":       {phase: v1alpha1.SandboxPending, want: "sandbox phase Pending"},
		"failed":        {phase: v1alpha1.SandboxFailed, msg: "Failed: Evicted", want: "sandbox phase Failed: Failed: Evicted"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := &v1alpha1.Sandbox{Status: v1alpha1.SandboxStatus{Phase: tc.phase, Message: tc.msg}}
			st := ComputeStatus(c, claimView{Name: "sb", Sandbox: sb})
			if got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Message; got != tc.want {
				t.Errorf("message %q, want %q", got, tc.want)
			}
		})
	}
}
