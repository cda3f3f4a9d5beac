package k8s_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
	pb "github.com/sandpod/sandpod/proto/sandpod/v1"
)

func restartTemplate(ns, name string, on bool) *v1alpha1.SandboxTemplate {
	t := makeTemplate(ns, name)
	t.Spec.RestartOnFailure = on
	return t
}

func sandboxRestarts(t *testing.T, ns, name string) bool {
	t.Helper()
	sb := &v1alpha1.Sandbox{}
	if err := env.Get(sb, ns, name); err != nil {
		t.Fatal(err)
	}
	return sb.Spec.RestartOnFailure
}

// A template's restartOnFailure reaches its sandboxes (warm pool members
// and cold ones); a claim's overrides it either way, also on the single
// patch that takes a warm member.
func TestRestartOnFailureFromTemplateAndClaim(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, restartTemplate(ns, "restart", true), restartTemplate(ns, "plain", false), makePool(ns, "pool", "restart", 2))
	for _, m := range waitPoolReady(t, ns, "pool", 2, "") {
		if !m.Spec.RestartOnFailure {
			t.Errorf("pool member %s: restartOnFailure false, want the template's true", m.Name)
		}
	}

	for _, tc := range []struct {
		claim, template string
		override        *bool
		warm, want      bool
	}{
		{"warm-default", "restart", nil, true, true},
		{"warm-off", "restart", ptr.To(false), true, false},
		{"cold-on", "plain", ptr.To(true), false, true},
		{"cold-default", "plain", nil, false, false},
	} {
		c := makeClaim(ns, tc.claim, tc.template)
		c.Spec.RestartOnFailure = tc.override
		create(t, c)
		got := waitClaimReady(t, ns, tc.claim)
		if got.Status.Warm != tc.warm {
			t.Errorf("claim %s: warm %v, want %v", tc.claim, got.Status.Warm, tc.warm)
		}
		if r := sandboxRestarts(t, ns, got.Status.SandboxName); r != tc.want {
			t.Errorf("claim %s: sandbox restartOnFailure %v, want %v", tc.claim, r, tc.want)
		}
		if tc.warm {
			waitPoolReady(t, ns, "pool", 2, "") // the next warm claim finds a member
		}
	}

	// And it acts: a claimed sandbox of a template with restartOnFailure
	// whose pod fails gets a new pod.
	crash := restartTemplate(ns, "crash", true)
	crash.Spec.PodTemplate.Labels[harness.LabelFail] = "true"
	create(t, crash, makeClaim(ns, "crash-1", "crash"))
	first := waitPod(t, ns, "crash-1", "created", func(_ *corev1.Pod, err error) bool { return err == nil })
	waitPod(t, ns, "crash-1", "replaced", func(p *corev1.Pod, err error) bool { return err == nil && p.UID != first.UID })
}

// The bridge's CreateSandbox and ClaimSandbox take restart_on_failure over
// the template's default; unset keeps it.
func TestBridgeRestartOnFailure(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, restartTemplate(ns, "restart", true), restartTemplate(ns, "plain", false), makePool(ns, "pool", "restart", 1))
	waitPoolReady(t, ns, "pool", 1, "")
	api := startBridge(t, ns)
	ctx := callCtx(t)

	warm, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "restart", Namespace: ns, RestartOnFailure: ptr.To(false)})
	if err != nil {
		t.Fatal(err)
	}
	if !warm.GetWarm() {
		t.Errorf("claim was not warm")
	}
	if sandboxRestarts(t, ns, warm.GetSandbox().GetName()) {
		t.Errorf("warm claim with restart_on_failure=false: sandbox still restarts")
	}
	for _, tc := range []struct {
		template string
		override *bool
		want     bool
	}{
		{"restart", nil, true},
		{"plain", nil, false},
		{"plain", ptr.To(true), true},
	} {
		got, err := api.CreateSandbox(ctx, &pb.CreateSandboxRequest{Template: tc.template, Namespace: ns, RestartOnFailure: tc.override})
		if err != nil {
			t.Fatal(err)
		}
		if r := sandboxRestarts(t, ns, got.GetSandbox().GetName()); r != tc.want {
			t.Errorf("create of %s with %v: restartOnFailure %v, want %v", tc.template, tc.override, r, tc.want)
		}
	}
	cold, err := api.ClaimSandbox(ctx, &pb.ClaimSandboxRequest{Template: "plain", Namespace: ns, RestartOnFailure: ptr.To(true)})
	if err != nil {
		t.Fatal(err)
	}
	if cold.GetWarm() || !sandboxRestarts(t, ns, cold.GetSandbox().GetName()) {
		t.Errorf("cold claim with restart_on_failure=true: warm %v, restartOnFailure false", cold.GetWarm())
	}
}
