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
		// restartOnFailure: a failed pod being replaced or waiting for its
		// replacement comes back by itself: Pending, not Failed.
		"pod failed, backing off": {
			in: statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadFailed},
				Restart: v1alpha1.ReasonRestartBackOff, BackOff: 20 * time.Second},
			wantPhase: v1alpha1.SandboxPending, wantReason: v1alpha1.ReasonRestartBackOff,
		},
		"pod failed, replaced": {
			in: statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadFailed},
				Restart: v1alpha1.ReasonRestarting, RestartStreak: 1},
			wantPhase: v1alpha1.SandboxPending, wantReason: v1alpha1.ReasonRestarting,
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

// A replacement is counted in the status with its time and streak; the
// back-off message says when the next one comes.
func TestComputeStatusRestarts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	failed := readyPod()
	failed.Status.Phase, failed.Status.Reason = corev1.PodFailed, "Error"
	obs := lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadFailed}
	sb := makeSandbox("sb").obj()
	sb.Status.PodRestarts, sb.Status.PodRestartStreak = 4, 2

	st := ComputeStatus(sb, statusInput{Now: now, Observed: obs, Pod: failed, Restart: v1alpha1.ReasonRestarting, RestartStreak: 3})
	if st.PodRestarts != 5 || st.PodRestartStreak != 3 || st.LastPodRestartTime == nil || !st.LastPodRestartTime.Time.Equal(now) {
		t.Errorf("after a replacement: restarts %d streak %d last %v, want 5 3 %v", st.PodRestarts, st.PodRestartStreak, st.LastPodRestartTime, now)
	}
	sb.Status = st
	st = ComputeStatus(sb, statusInput{Now: now, Observed: obs, Pod: failed, Restart: v1alpha1.ReasonRestartBackOff, BackOff: 40 * time.Second})
	if st.PodRestarts != 5 || st.PodRestartStreak != 3 {
		t.Errorf("backing off counted a restart: %d %d", st.PodRestarts, st.PodRestartStreak)
	}
	if want := "Failed: Error; replaced in 40s (restart 4 in a row)"; st.Message != want {
		t.Errorf("message %q, want %q", st.Message, want)
	}
}

// A sandbox whose pod exited 0 is suspended (reason Completed) unless it
// restarts on failure; its Suspended condition says so.
func TestCompleted(t *testing.T) {
	succeeded := readyPod()
	succeeded.Status.Phase = corev1.PodSucceeded
	failed := readyPod()
	failed.Status.Phase = corev1.PodFailed
	going := succeeded.DeepCopy()
	going.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		restart bool
		mode    v1alpha1.OperatingMode
		expiry  lifecycle.ExpiryAction
		want    bool
	}{
		{"exited 0", succeeded, false, "", lifecycle.ExpiryNone, true},
		{"exited 0, restarts on failure: replaced instead", succeeded, true, "", lifecycle.ExpiryNone, false},
		{"failed", failed, false, "", lifecycle.ExpiryNone, false},
		{"exited 0 on the SIGTERM of a suspend, resumed since", going, false, "", lifecycle.ExpiryNone, false},
		{"running", readyPod(), false, "", lifecycle.ExpiryNone, false},
		{"no pod", nil, false, "", lifecycle.ExpiryNone, false},
		{"already suspended", succeeded, false, v1alpha1.OperatingModeSuspended, lifecycle.ExpiryNone, false},
		{"expired (retained)", succeeded, false, "", lifecycle.ExpiryRetain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := makeSandbox("sb").obj()
			sb.Spec.RestartOnFailure, sb.Spec.OperatingMode = tc.restart, tc.mode
			if got := completedPod(sb, tc.pod, tc.expiry); got != tc.want {
				t.Errorf("completedPod = %v, want %v", got, tc.want)
			}
		})
	}
	sb := makeSandbox("sb").obj()
	sb.Annotations = map[string]string{v1alpha1.AnnotationCompleted: "true"}
	st := ComputeStatus(sb, statusInput{Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeSuspended}})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSuspended); st.Phase != v1alpha1.SandboxSuspended || c.Reason != v1alpha1.ReasonCompleted {
		t.Errorf("completed: phase %s, Suspended reason %s; want Suspended, Completed", st.Phase, c.Reason)
	}
}

func TestRanFor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := readyPod()
	pod.CreationTimestamp = metav1.NewTime(t0)
	if got := ranFor(pod, t0.Add(time.Minute)); got != time.Minute {
		t.Errorf("no start, no end: %s, want 1m (creation to now)", got)
	}
	start := metav1.NewTime(t0.Add(10 * time.Second))
	pod.Status.StartTime = &start
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(20 * time.Second))}}},
		{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(40 * time.Second))}}},
	}
	if got := ranFor(pod, t0.Add(time.Hour)); got != 30*time.Second {
		t.Errorf("start to the last container's end: %s, want 30s", got)
	}
}

// status.agentAuth follows the pod: set for a pod this controller made (its
// label), absent for one an earlier controller made and when there is no
// pod, so the bridge picks the right way to its agent.
func TestComputeStatusAgentAuth(t *testing.T) {
	running := lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: lifecycle.WorkloadReady}
	marked := readyPod()
	marked.Labels = map[string]string{v1alpha1.LabelAgentAuth: string(v1alpha1.AgentAuthClientCertificate)}
	sb := &v1alpha1.Sandbox{}
	sb.Status.AgentAuth = v1alpha1.AgentAuthClientCertificate
	for name, c := range map[string]struct {
		pod  *corev1.Pod
		want v1alpha1.AgentAuth
	}{
		"pod of this controller":  {marked, v1alpha1.AgentAuthClientCertificate},
		"pod of an earlier one":   {readyPod(), ""},
		"no pod (suspended, say)": {nil, ""},
	} {
		obs := running
		if c.pod == nil {
			obs = lifecycle.Observed{Mode: v1alpha1.OperatingModeSuspended, Workload: lifecycle.WorkloadAbsent}
		}
		if got := ComputeStatus(sb, statusInput{Observed: obs, Pod: c.pod}).AgentAuth; got != c.want {
			t.Errorf("%s: agentAuth %q, want %q", name, got, c.want)
		}
	}
}
