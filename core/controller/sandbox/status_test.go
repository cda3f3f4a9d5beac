package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func readyPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sb"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func TestWorkloadOf(t *testing.T) {
	failed := readyPod()
	failed.Status.Phase = corev1.PodFailed
	starting := readyPod()
	starting.Status.Conditions = nil
	cases := map[string]struct {
		pod  *corev1.Pod
		want lifecycle.WorkloadState
	}{
		"absent":   {want: lifecycle.WorkloadAbsent},
		"ready":    {pod: readyPod(), want: lifecycle.WorkloadReady},
		"starting": {pod: starting, want: lifecycle.WorkloadStarting},
		"failed":   {pod: failed, want: lifecycle.WorkloadFailed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := WorkloadOf(tc.pod); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		in         statusInput
		wantPhase  v1alpha1.SandboxPhase
		wantTrue   []string
		wantReason string // of Ready
	}{
		"running": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadReady}, Pod: readyPod()},
			wantPhase: v1alpha1.SandboxRunning, wantTrue: []string{v1alpha1.ConditionReady}, wantReason: v1alpha1.ReasonPodReady,
		},
		"suspended": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeSuspended}},
			wantPhase: v1alpha1.SandboxSuspended, wantTrue: []string{v1alpha1.ConditionSuspended}, wantReason: v1alpha1.ReasonSuspended,
		},
		"paused keeps its pod": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModePaused, Workload: lifecycle.WorkloadReady}, Pod: readyPod()},
			wantPhase: v1alpha1.SandboxPaused, wantTrue: []string{v1alpha1.ConditionPaused}, wantReason: v1alpha1.ReasonPaused,
		},
		"paused, pod being replaced": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModePaused, Workload: lifecycle.WorkloadStarting}},
			wantPhase: v1alpha1.SandboxPending, wantReason: v1alpha1.ReasonPodAbsent,
		},
		"expired under retain": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Expired: true}},
			wantPhase: v1alpha1.SandboxExpired, wantTrue: []string{v1alpha1.ConditionExpired, v1alpha1.ConditionFinished}, wantReason: v1alpha1.ReasonShutdownTimeReached,
		},
		"refused by policy": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning}, Refused: "no", RefusedReason: v1alpha1.ReasonRuntimeClassMissing},
			wantPhase: v1alpha1.SandboxFailed, wantTrue: []string{v1alpha1.ConditionFinished}, wantReason: v1alpha1.ReasonRuntimeClassMissing,
		},
		"pod failed": {
			in:        statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadFailed}},
			wantPhase: v1alpha1.SandboxFailed, wantTrue: []string{v1alpha1.ConditionFinished}, wantReason: v1alpha1.ReasonPodFailed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sb := makeSandbox("sb").obj()
			sb.Generation = 3
			tc.in.Now = now
			st := ComputeStatus(sb, tc.in)
			if st.Phase != tc.wantPhase || st.ObservedGeneration != 3 {
				t.Errorf("phase=%s gen=%d, want %s 3", st.Phase, st.ObservedGeneration, tc.wantPhase)
			}
			for _, c := range st.Conditions {
				want := false
				for _, w := range tc.wantTrue {
					want = want || w == c.Type
				}
				if (c.Status == metav1.ConditionTrue) != want {
					t.Errorf("condition %s = %s", c.Type, c.Status)
				}
				if c.ObservedGeneration != 3 {
					t.Errorf("condition %s has observedGeneration %d", c.Type, c.ObservedGeneration)
				}
			}
			if r := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Reason; r != tc.wantReason {
				t.Errorf("Ready reason = %s, want %s", r, tc.wantReason)
			}
		})
	}
}

func TestLastActivity(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sb := makeSandbox("sb").obj()
	sb.CreationTimestamp = metav1.NewTime(t0)
	if got := lifecycle.LastActivity(sb); !got.Equal(t0) {
		t.Errorf("fresh sandbox: %v", got)
	}
	sb.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))}}
	if got := lifecycle.LastActivity(sb); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("ready since: %v", got)
	}
	at := metav1.NewTime(t0.Add(time.Hour))
	sb.Status.LastActivityTime = &at
	if got := lifecycle.LastActivity(sb); !got.Equal(at.Time) {
		t.Errorf("activity: %v", got)
	}
}

func TestPodCreatedIsNews(t *testing.T) {
	cases := map[string]struct {
		status v1alpha1.SandboxStatus
		want   bool
	}{
		"first pod of a new sandbox (or pool member)": {want: false},
		"pod made again after suspend or restart": {status: v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxSuspended,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}}}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podCreatedIsNews(&v1alpha1.Sandbox{Status: tc.status}); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The service's DNS name follows the controller's --cluster-domain; a
// sandbox without a service has none.
func TestComputeStatusServiceFQDN(t *testing.T) {
	in := statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadReady}, Pod: readyPod()}
	sb := makeSandbox("sb").obj()
	if got := ComputeStatus(sb, in).ServiceFQDN; got != "" {
		t.Errorf("no service: serviceFQDN %q, want none", got)
	}
	sb.Spec.Service = true
	for domain, want := range map[string]string{"": "sb.ns.svc.cluster.local", "corp.example": "sb.ns.svc.corp.example"} {
		in.ClusterDomain = domain
		if got := ComputeStatus(sb, in).ServiceFQDN; got != want {
			t.Errorf("cluster domain %q: serviceFQDN %q, want %q", domain, got, want)
		}
	}
}
