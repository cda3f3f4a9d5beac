package sandbox

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

func podWithAgentStatus(restarts int32, last *corev1.ContainerStateTerminated) *corev1.Pod {
	pod := readyPod()
	pod.Spec.Containers = []corev1.Container{{Name: "main"}, {Name: "sidecar"}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "sidecar", RestartCount: 9},
		{Name: "main", RestartCount: restarts, LastTerminationState: corev1.ContainerState{Terminated: last}},
	}
	return pod
}

func TestAgentRestarts(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC))
	cases := map[string]struct {
		pod      *corev1.Pod
		want     int32
		wantNote []string // substrings; none means an empty note
	}{
		"no pod":                        {},
		"never restarted":               {pod: podWithAgentStatus(0, nil)},
		"sidecar restarts do not count": {pod: podWithAgentStatus(0, nil)},
		"killed (hung or OOM)": {
			pod:      podWithAgentStatus(1, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: at}),
			want:     1,
			wantNote: []string{"agent restarted 1 time;", "code 137 (Error) at 2026-12-02T17:00:00Z", "liveness probe"},
		},
		"crashed twice": {
			pod:      podWithAgentStatus(2, &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", FinishedAt: at}),
			want:     2,
			wantNote: []string{"agent restarted 2 times;", "code 2 (Error)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, note := agentRestarts(tc.pod, "")
			if got != tc.want {
				t.Errorf("restarts = %d, want %d", got, tc.want)
			}
			if len(tc.wantNote) == 0 && note != "" {
				t.Errorf("note = %q, want none", note)
			}
			for _, w := range tc.wantNote {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
		})
	}
}

func TestComputeStatusReportsAgentRestarts(t *testing.T) {
	last := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}
	running := podWithAgentStatus(1, last)
	restarting := podWithAgentStatus(1, last)
	restarting.Status.Conditions = nil
	restarting.Status.ContainerStatuses[1].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		workload  lifecycle.WorkloadState
		wantPhase v1alpha1.SandboxPhase
		wantMsg   string
	}{
		"back up":    {running, lifecycle.WorkloadReady, v1alpha1.SandboxRunning, "agent restarted 1 time; last exit: code 137"},
		"restarting": {restarting, lifecycle.WorkloadStarting, v1alpha1.SandboxPending, "main: CrashLoopBackOff; agent restarted 1 time"},
	} {
		t.Run(name, func(t *testing.T) {
			st := ComputeStatus(makeSandbox("sb").obj(), statusInput{
				Now: time.Now(), Pod: tc.pod,
				Observed: lifecycle.Observed{Mode: v1alpha1.OperatingModeRunning, Workload: tc.workload},
			})
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if st.Phase != tc.wantPhase || st.AgentRestarts != 1 || !strings.HasPrefix(ready.Message, tc.wantMsg) {
				t.Errorf("phase=%s restarts=%d Ready message %q; want %s, 1, %q…", st.Phase, st.AgentRestarts, ready.Message, tc.wantPhase, tc.wantMsg)
			}
		})
	}
}

func TestBuildPodAgentLivenessProbe(t *testing.T) {
	pod, err := BuildPod(makeSandbox("sb").obj(), PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, AgentImage: "agent:1"})
	if err != nil {
		t.Fatal(err)
	}
	p := pod.Spec.Containers[0].LivenessProbe
	if p == nil || p.GRPC == nil || p.GRPC.Port != v1alpha1.AgentHealthPort || p.TimeoutSeconds < 2 || p.FailureThreshold < 2 {
		t.Errorf("agent liveness probe = %+v, want gRPC health on the agent port with a tolerant timeout", p)
	}
	if pod.Spec.Containers[0].ReadinessProbe != nil {
		t.Error("a readiness probe would delay every cold start")
	}

	own := makeSandbox("sb").obj()
	mine := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}
	own.Spec.PodTemplate.Spec.Containers[0].LivenessProbe = mine
	pod, err = BuildPod(own, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, AgentImage: "agent:1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].LivenessProbe; got.HTTPGet == nil || got.GRPC != nil {
		t.Errorf("the template's own liveness probe was replaced: %+v", got)
	}
}

// With a sidecar first, the restarts counted are the agent container's, not
// the sidecar's.
func TestAgentRestartsOfTheNamedContainer(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis"}, {Name: "main"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "redis", RestartCount: 5},
			{Name: "main", RestartCount: 1},
		}},
	}
	if got, _ := agentRestarts(pod, "main"); got != 1 {
		t.Errorf("agentRestarts(main) = %d, want 1", got)
	}
	if got, _ := agentRestarts(pod, ""); got != 5 {
		t.Errorf("agentRestarts(default: first) = %d, want 5", got)
	}
}
