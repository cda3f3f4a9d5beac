package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func TestStatusWorthWriting(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	running := statusInput{Now: now, Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadReady}, Pod: readyPod()}
	starting := statusInput{Now: now, Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadStarting}, Pod: pendingPod("")}
	waiting := starting
	waiting.Pod = pendingPod("ImagePullBackOff")
	refused := statusInput{Now: now, Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadAbsent},
		Refused: "no runtime class", RefusedReason: v1alpha1.ReasonRuntimeClassMissing}

	// sb at generation gen with the status a pass computed at statusGen.
	at := func(gen, statusGen int64, in statusInput, labels map[string]string) *v1alpha1.Sandbox {
		sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Generation: statusGen, Labels: labels}}
		if in.Pod != nil || in.Refused != "" {
			sb.Status = ComputeStatus(sb, in)
		}
		sb.Generation = gen
		return sb
	}
	member := map[string]string{v1alpha1.LabelPool: "p"}
	claimed := map[string]string{v1alpha1.LabelPool: "p", v1alpha1.LabelClaim: "c"}
	cases := map[string]struct {
		sb   *v1alpha1.Sandbox
		in   statusInput
		want bool
	}{
		"unchanged": {sb: at(1, 1, running, nil), in: running, want: false},
		"only the generation moved (an adoption)":  {sb: at(2, 1, running, claimed), in: running, want: false},
		"the generation moved with the phase":      {sb: at(2, 1, starting, nil), in: running, want: true},
		"the phase moved":                          {sb: at(1, 1, starting, nil), in: running, want: true},
		"a new member, Pending":                    {sb: at(1, 0, statusInput{}, member), in: starting, want: false},
		"a new member, Pending with a reason":      {sb: at(1, 0, statusInput{}, member), in: waiting, want: true},
		"a new member, refused":                    {sb: at(1, 0, statusInput{}, member), in: refused, want: true},
		"a new member, Running":                    {sb: at(1, 0, statusInput{}, member), in: running, want: true},
		"a new sandbox outside a pool, Pending":    {sb: at(1, 0, statusInput{}, nil), in: starting, want: true},
		"a new claimed sandbox, Pending":           {sb: at(1, 0, statusInput{}, claimed), in: starting, want: true},
		"a member back to Pending after Running":   {sb: at(1, 1, running, member), in: starting, want: true},
		"a first status with the generation unset": {sb: at(1, 0, statusInput{}, nil), in: running, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := ComputeStatus(tc.sb, tc.in)
			if got := statusWorthWriting(tc.sb, st); got != tc.want {
				t.Errorf("statusWorthWriting = %v, want %v (status %+v over %+v)", got, tc.want, st, tc.sb.Status)
			}
		})
	}
}

// pendingPod is a pod not ready yet, its agent container waiting for reason
// (none: just created).
func pendingPod(reason string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if reason != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
	}
	return p
}

func TestUntrackFirst(t *testing.T) {
	member := func() *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelPool: "p"}}}
	}
	now := metav1.Now()
	cases := map[string]struct {
		change func(*v1alpha1.Sandbox)
		want   bool
	}{
		"new member":         {func(*v1alpha1.Sandbox) {}, true},
		"member with status": {func(sb *v1alpha1.Sandbox) { sb.Status.Phase = v1alpha1.SandboxRunning }, false},
		"member with conditions only": {func(sb *v1alpha1.Sandbox) {
			sb.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady}}
		}, false},
		"claimed":       {func(sb *v1alpha1.Sandbox) { sb.Labels[v1alpha1.LabelClaim] = "c" }, false},
		"not in a pool": {func(sb *v1alpha1.Sandbox) { sb.Labels = nil }, false},
		"being deleted": {func(sb *v1alpha1.Sandbox) { sb.DeletionTimestamp = &now }, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sb := member()
			c.change(sb)
			if got := untrackFirst(sb); got != c.want {
				t.Errorf("untrackFirst = %v, want %v", got, c.want)
			}
		})
	}
}
