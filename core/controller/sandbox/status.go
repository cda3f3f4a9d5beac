package sandbox

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// WorkloadOf maps a pod to the backend-neutral workload state.
func WorkloadOf(pod *corev1.Pod) lifecycle.WorkloadState {
	switch {
	case pod == nil:
		return lifecycle.WorkloadAbsent
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return lifecycle.WorkloadFailed
	case pod.DeletionTimestamp != nil:
		return lifecycle.WorkloadStarting // on its way out; a new one follows
	case podReady(pod):
		return lifecycle.WorkloadReady
	default:
		return lifecycle.WorkloadStarting
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// statusInput is everything the status of one pass depends on.
type statusInput struct {
	Now      time.Time
	Observed lifecycle.Observed
	Pod      *corev1.Pod
	// IdleSuspended: this pass suspended the sandbox for idleness.
	IdleSuspended bool
	// Refused is set when the pod cannot be made (e.g. RuntimeClass policy).
	Refused       string
	RefusedReason string
	// LeaseExpired: the sandbox expired because its lease ran out.
	LeaseExpired bool
	// ClusterDomain is the cluster's DNS domain, for the service's name.
	ClusterDomain string
	// Waiting is set while the pod waits for something other than itself
	// (a snapshot being taken, volumes being restored).
	Waiting       string
	WaitingReason string
	// Restart is set while a failed pod is replaced (restartOnFailure):
	// ReasonRestarting or ReasonRestartBackOff. The sandbox is then
	// Pending, not Failed: it comes back by itself.
	Restart string
	// RestartStreak > 0: this pass replaced the failed pod, the
	// RestartStreak-th replacement in a row.
	RestartStreak int32
	// BackOff: the failed pod is replaced after this long.
	BackOff time.Duration
}

// ComputeStatus is the status a sandbox should have after a pass. It starts
// from the old status so unchanged conditions keep their transition times.
func ComputeStatus(sb *v1alpha1.Sandbox, in statusInput) v1alpha1.SandboxStatus {
	st := *sb.Status.DeepCopy()
	gen := sb.Generation
	st.ObservedGeneration = gen
	st.Phase = lifecycle.Phase(in.Observed)
	st.Message = ""
	st.PodName, st.PodIPs, st.AgentAuth = "", nil, ""
	restarts, restartNote := agentRestarts(in.Pod, sb.Spec.AgentContainer)
	st.AgentRestarts = restarts
	if in.Pod != nil {
		st.PodName = in.Pod.Name
		// In the write that reports the pod, so the bridge learns how to
		// reach its agent at no write of its own.
		if in.Pod.Labels[v1alpha1.LabelAgentAuth] == string(v1alpha1.AgentAuthClientCertificate) {
			st.AgentAuth = v1alpha1.AgentAuthClientCertificate
		}
		for _, ip := range in.Pod.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
	}
	st.ServiceFQDN = ""
	if sb.Spec.Service {
		st.ServiceFQDN = v1alpha1.ServiceFQDN(sb, in.ClusterDomain)
	}
	if in.RestartStreak > 0 {
		st.PodRestarts++
		st.PodRestartStreak = in.RestartStreak
		t := metav1.NewTime(in.Now)
		st.LastPodRestartTime = &t
	}
	if in.Restart != "" && st.Phase == v1alpha1.SandboxFailed {
		st.Phase = v1alpha1.SandboxPending
	}
	if in.Refused != "" {
		st.Phase = v1alpha1.SandboxFailed
		st.Message = in.Refused
	}

	set := func(t string, ok bool, reason, msg string) {
		lifecycle.SetCondition(&st.Conditions, t, ok, reason, msg, gen, in.Now)
	}

	readyReason, readyMsg := v1alpha1.ReasonPodPending, ""
	switch {
	case in.Refused != "":
		readyReason, readyMsg = in.RefusedReason, in.Refused
	case in.Restart != "" && st.Phase == v1alpha1.SandboxPending:
		readyReason, readyMsg = in.Restart, restartMessage(in, st)
		st.Message = readyMsg
	case in.Waiting != "" && st.Phase == v1alpha1.SandboxPending:
		readyReason, readyMsg = in.WaitingReason, in.Waiting
	case st.Phase == v1alpha1.SandboxRunning:
		readyReason, readyMsg = v1alpha1.ReasonPodReady, restartNote
	case st.Phase == v1alpha1.SandboxSuspended:
		readyReason = v1alpha1.ReasonSuspended
	case st.Phase == v1alpha1.SandboxPaused:
		readyReason = v1alpha1.ReasonPaused
	case st.Phase == v1alpha1.SandboxExpired:
		readyReason = v1alpha1.ReasonShutdownTimeReached
	case st.Phase == v1alpha1.SandboxFailed:
		readyReason, readyMsg = v1alpha1.ReasonPodFailed, podFailure(in.Pod)
		st.Message = readyMsg
	case in.Pod == nil:
		readyReason = v1alpha1.ReasonPodAbsent
	default:
		readyMsg = joinNonEmpty("; ", podWaiting(in.Pod), restartNote)
	}
	set(v1alpha1.ConditionReady, st.Phase == v1alpha1.SandboxRunning, readyReason, readyMsg)

	suspended := in.Observed.Mode == v1alpha1.OperatingModeSuspended
	susReason := v1alpha1.ReasonRunning
	if suspended {
		susReason = v1alpha1.ReasonSuspended
		switch {
		case in.IdleSuspended || sb.Annotations[v1alpha1.AnnotationIdleSuspended] == "true":
			susReason = v1alpha1.ReasonIdle
		case sb.Annotations[v1alpha1.AnnotationCompleted] == "true":
			susReason = v1alpha1.ReasonCompleted
		}
	}
	set(v1alpha1.ConditionSuspended, suspended, susReason, "")

	// Paused: the agent stopped the sandbox's processes in its pod (the
	// bridge asked it, then set operatingMode Paused); the pod is kept.
	paused := st.Phase == v1alpha1.SandboxPaused
	pauseReason := v1alpha1.ReasonRunning
	if paused {
		pauseReason = v1alpha1.ReasonPaused
	}
	set(v1alpha1.ConditionPaused, paused, pauseReason, "")

	expReason := v1alpha1.ReasonRunning
	if in.Observed.Expired {
		expReason = v1alpha1.ReasonShutdownTimeReached
		if in.LeaseExpired {
			expReason = v1alpha1.ReasonLeaseExpired
		}
	}
	set(v1alpha1.ConditionExpired, in.Observed.Expired, expReason, "")

	finished := in.Observed.Expired || st.Phase == v1alpha1.SandboxFailed
	finReason := v1alpha1.ReasonRunning
	switch {
	case in.Observed.Expired:
		finReason = expReason
	case in.Refused != "":
		finReason = in.RefusedReason
	case finished:
		finReason = v1alpha1.ReasonPodFailed
	}
	set(v1alpha1.ConditionFinished, finished, finReason, "")
	return st
}

// restartMessage says why the pod is replaced and, while backing off, when
// (e.g. "Failed: Error; replaced in 20s (restart 3 in a row)").
func restartMessage(in statusInput, st v1alpha1.SandboxStatus) string {
	why := podFailure(in.Pod)
	if in.Restart != v1alpha1.ReasonRestartBackOff {
		return joinNonEmpty("; ", why, "replacing the pod")
	}
	return joinNonEmpty("; ", why, fmt.Sprintf("replaced in %s (restart %d in a row)", in.BackOff.Round(time.Second), st.PodRestartStreak+1))
}

func podFailure(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	msg := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		msg += ": " + pod.Status.Reason
	}
	if pod.Status.Message != "" {
		msg += ": " + pod.Status.Message
	}
	return msg
}

func joinNonEmpty(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}

func podWaiting(pod *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return cs.Name + ": " + w.Reason
		}
	}
	return ""
}

// podCreatedIsNews says whether creating a sandbox's pod is worth an event:
// not for its first pod (every sandbox, and every warm pool refill, makes
// one; the status says Pending), but for a pod made again after a suspend,
// a restart or a refused attempt, whose status the controller wrote before.
func podCreatedIsNews(sb *v1alpha1.Sandbox) bool {
	return len(sb.Status.Conditions) > 0
}
