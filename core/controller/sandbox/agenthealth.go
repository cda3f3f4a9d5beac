package sandbox

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// The agent's liveness probe: the kubelet calls the agent's standard gRPC
// health service (no secret needed; on a port of its own without TLS, which
// a kubelet's gRPC probe does not speak) and restarts the container when it does
// not answer three times in a row, so a hung agent is replaced within about
// 15-25 s. The timeout is generous so that a loaded node does not restart a
// healthy agent; the probe does not gate readiness (there is no readiness
// probe, see injectAgent).
const (
	livenessPeriodSeconds    = 5
	livenessTimeoutSeconds   = 3
	livenessFailureThreshold = 3
	// A hung agent does not act on SIGTERM: kill it soon, not after the
	// pod's grace period (30 s by default).
	livenessGraceSeconds = 2
)

// agentLivenessProbe is the probe set on the agent's container unless the
// template brings its own liveness probe for that container.
func agentLivenessProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: v1alpha1.AgentHealthPort}},
		PeriodSeconds:    livenessPeriodSeconds,
		TimeoutSeconds:   livenessTimeoutSeconds,
		FailureThreshold: livenessFailureThreshold,

		TerminationGracePeriodSeconds: ptrTo(int64(livenessGraceSeconds)),
	}
}

// agentStatus is the status of the container the agent runs in: the
// sandbox's agentContainer, else the pod's first container.
func agentStatus(pod *corev1.Pod, agentContainer string) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	i := v1alpha1.AgentContainerIndex(&pod.Spec, agentContainer)
	if i < 0 {
		return nil
	}
	name := pod.Spec.Containers[i].Name
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// agentRestarts is how often the agent's container restarted in this pod
// (it died, or its liveness probe found it hung), and for a person what its
// last exit was; "" when it never restarted.
func agentRestarts(pod *corev1.Pod, agentContainer string) (int32, string) {
	cs := agentStatus(pod, agentContainer)
	if cs == nil || cs.RestartCount == 0 {
		return 0, ""
	}
	times := "times"
	if cs.RestartCount == 1 {
		times = "time"
	}
	msg := fmt.Sprintf("agent restarted %d %s", cs.RestartCount, times)
	if t := cs.LastTerminationState.Terminated; t != nil {
		msg += fmt.Sprintf("; last exit: code %d", t.ExitCode)
		if t.Reason != "" {
			msg += " (" + t.Reason + ")"
		}
		if !t.FinishedAt.IsZero() {
			msg += " at " + t.FinishedAt.UTC().Format(time.RFC3339)
		}
		if t.ExitCode == 137 {
			msg += ": killed, by its liveness probe when it stopped answering or by the OOM killer or a signal"
		}
	}
	return cs.RestartCount, msg
}
