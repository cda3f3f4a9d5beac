package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// A sandbox with a service is answered with its DNS name before the
// controller writes it (in the bridge's --cluster-domain); the controller's
// name wins once written.
func TestSandboxToProtoServiceFQDN(t *testing.T) {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns"}}
	if got := sandboxToProto(sb, "").GetServiceFqdn(); got != "" {
		t.Errorf("no service: %q, want none", got)
	}
	sb.Spec.Service = true
	if got := sandboxToProto(sb, "").GetServiceFqdn(); got != "sb.ns.svc.cluster.local" {
		t.Errorf("default domain: %q", got)
	}
	if got := sandboxToProto(sb, "corp.example").GetServiceFqdn(); got != "sb.ns.svc.corp.example" {
		t.Errorf("--cluster-domain corp.example: %q", got)
	}
	sb.Status.ServiceFQDN = "sb.ns.svc.other.example"
	if got := sandboxToProto(sb, "corp.example").GetServiceFqdn(); got != sb.Status.ServiceFQDN {
		t.Errorf("with the controller's name: %q, want %q", got, sb.Status.ServiceFQDN)
	}
}

// What the controller counts reaches clients: the agent container's
// restarts in its pod and the pods restartOnFailure replaced, apart.
func TestSandboxToProtoRestarts(t *testing.T) {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns"}}
	sb.Status.AgentRestarts, sb.Status.PodRestarts = 2, 3
	if got := sandboxToProto(sb, ""); got.GetAgentRestarts() != 2 || got.GetPodRestarts() != 3 {
		t.Errorf("agent_restarts %d, pod_restarts %d; want 2, 3", got.GetAgentRestarts(), got.GetPodRestarts())
	}
}

// Two backends in one process each answer in their own cluster's domain: the
// watch events (the hub's) too, not only the calls.
func TestHubEventsInItsOwnDomain(t *testing.T) {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns"}}
	sb.Spec.Service = true
	hubs := map[string]*hub{"a.example": newHub("a.example"), "b.example": newHub("b.example")}
	subs := map[string]*subscriber{}
	for domain, h := range hubs {
		s := &subscriber{namespace: "ns", selector: labels.Everything(), ch: make(chan *sandpodv1.WatchSandboxesResponse, 1)}
		defer h.subscribe(s)()
		subs[domain] = s
	}
	for domain, h := range hubs {
		h.publish(eventAdded, sb)
		if got, want := (<-subs[domain].ch).GetSandbox().GetServiceFqdn(), "sb.ns.svc."+domain; got != want {
			t.Errorf("hub of %s: %q, want %q", domain, got, want)
		}
	}
}

// A pause or resume answered before the controller reports it: the
// operating mode, already carried out through the agent, wins over a
// Running or Paused status; no other phase is changed.
func TestReportedPhaseFollowsPauseAndResume(t *testing.T) {
	cases := map[string]struct {
		status v1alpha1.SandboxPhase
		mode   v1alpha1.OperatingMode
		want   sandpodv1.Phase
	}{
		"paused, not reported yet":  {v1alpha1.SandboxRunning, v1alpha1.OperatingModePaused, sandpodv1.Phase_PHASE_PAUSED},
		"resumed, not reported yet": {v1alpha1.SandboxPaused, v1alpha1.OperatingModeRunning, sandpodv1.Phase_PHASE_RUNNING},
		"paused and reported":       {v1alpha1.SandboxPaused, v1alpha1.OperatingModePaused, sandpodv1.Phase_PHASE_PAUSED},
		"running":                   {v1alpha1.SandboxRunning, v1alpha1.OperatingModeRunning, sandpodv1.Phase_PHASE_RUNNING},
		"running, no mode":          {v1alpha1.SandboxRunning, "", sandpodv1.Phase_PHASE_RUNNING},
		"paused pod not back yet":   {v1alpha1.SandboxPending, v1alpha1.OperatingModePaused, sandpodv1.Phase_PHASE_PENDING},
		"suspending":                {v1alpha1.SandboxRunning, v1alpha1.OperatingModeSuspended, sandpodv1.Phase_PHASE_RUNNING},
		"suspended, resuming":       {v1alpha1.SandboxSuspended, v1alpha1.OperatingModeRunning, sandpodv1.Phase_PHASE_SUSPENDED},
	}
	for name, c := range cases {
		sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns"}}
		sb.Status.Phase, sb.Spec.OperatingMode = c.status, c.mode
		if got := sandboxToProto(sb, "").GetPhase(); got != c.want {
			t.Errorf("%s: phase %v, want %v", name, got, c.want)
		}
	}
}
