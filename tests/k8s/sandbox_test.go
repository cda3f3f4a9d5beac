package k8s_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// A sandbox gets its pod, PVC and Service, and no Secret: its pod mounts
// none and its agent carries only the bridge CA's public pin and the
// sandbox's UID; the CA itself is one Secret in sandpod's namespace.
func TestSandboxCreatesPodServicePVCAndNoSecret(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	sb := withStorage(makeSandbox(ns, "sb1"))
	sb.Spec.Service = true
	create(t, sb)

	got := waitSandbox(t, ns, "sb1", "running", phaseIs(v1alpha1.SandboxRunning))
	if !isReady(got) || got.Status.PodName != "sb1" || len(got.Status.PodIPs) == 0 {
		t.Errorf("status = %+v, want ready with pod sb1 and pod IPs", got.Status)
	}
	if want := "sb1." + ns + ".svc.cluster.local"; got.Status.ServiceFQDN != want {
		t.Errorf("serviceFQDN = %q, want %q", got.Status.ServiceFQDN, want)
	}

	pod := &corev1.Pod{}
	if err := env.Get(pod, ns, "sb1"); err != nil {
		t.Fatalf("pod: %v", err)
	}
	if !metav1.IsControlledBy(pod, got) || pod.Spec.Hostname != "sb1" || pod.Spec.Subdomain != "sb1" {
		t.Errorf("pod identity: owner=%v hostname=%q subdomain=%q", pod.OwnerReferences, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	svc := &corev1.Service{}
	if err := env.Get(svc, ns, "sb1"); err != nil {
		t.Fatalf("service: %v", err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector[v1alpha1.LabelSandbox] != "sb1" {
		t.Errorf("service is not headless or selects %v", svc.Spec.Selector)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Get(pvc, ns, "data-sb1"); err != nil {
		t.Fatalf("pvc: %v", err)
	}
	if !metav1.IsControlledBy(pvc, got) {
		t.Errorf("pvc not owned by the sandbox: %v", pvc.OwnerReferences)
	}
	if !podMountsPVC(pod, "data-sb1") {
		t.Errorf("pod does not mount pvc data-sb1: %+v", pod.Spec.Volumes)
	}
	if err := env.Get(&corev1.Secret{}, ns, v1alpha1.SecretName("sb1")); !isNotFound(err) {
		t.Errorf("per-sandbox agent Secret: %v, want none", err)
	}
	var secrets corev1.SecretList
	if err := env.Client.List(ctx, &secrets, client.InNamespace(ns)); err != nil || len(secrets.Items) != 0 {
		t.Errorf("Secrets in the sandbox's namespace: %d (%v), want none", len(secrets.Items), err)
	}
	for _, v := range pod.Spec.Volumes {
		// The one projection: the kubelet's token of this pod for the
		// agents' audience (TestAgentIdentityTokenReview).
		if p := v.Projected; v.Secret != nil || p != nil && (len(p.Sources) != 1 || p.Sources[0].ServiceAccountToken == nil || p.Sources[0].ServiceAccountToken.Audience != v1alpha1.AgentTokenAudience) {
			t.Errorf("pod volume %s mounts a Secret or projection", v.Name)
		}
	}
	ca := &corev1.Secret{}
	if err := env.Get(ca, agentconn.DefaultNamespace, agentconn.CASecretName); err != nil {
		t.Fatalf("the agents' CA: %v", err)
	}
	parsed, err := agentconn.ParseCA(ca.Data[agentconn.SecretKeyCACert], ca.Data[agentconn.SecretKeyCAKey])
	if err != nil || ca.Immutable == nil || !*ca.Immutable {
		t.Fatalf("the agents' CA Secret: %v, immutable %v", err, ca.Immutable)
	}
	cmd := strings.Join(pod.Spec.Containers[0].Command, " ")
	if want := "--bridge-ca-sha256 " + agentconn.Pin(parsed.Cert) + " --sandbox-uid " + string(got.UID); !strings.Contains(cmd, want) {
		t.Errorf("agent command %q lacks %q", cmd, want)
	}
	if strings.Contains(cmd, "secret") || strings.Contains(cmd, "BEGIN") {
		t.Errorf("agent command %q names a secret", cmd)
	}
	if got.Status.AgentAuth != v1alpha1.AgentAuthClientCertificate {
		t.Errorf("status.agentAuth = %q, want %q", got.Status.AgentAuth, v1alpha1.AgentAuthClientCertificate)
	}
}

func TestSandboxPodSecureDefaultsAndAgent(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: optsAgent("example.com/sandpod:test")})
	create(t, makeSandbox(ns, "sec"))
	pod := waitPod(t, ns, "sec", "created", func(_ *corev1.Pod, err error) bool { return err == nil })

	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", pod.Spec.AutomountServiceAccountToken)
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccomp = %+v, want RuntimeDefault", pod.Spec.SecurityContext)
	}
	main := pod.Spec.Containers[0]
	if sc := main.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context = %+v", main.SecurityContext)
	}
	if main.Resources.Limits.Cpu().IsZero() || main.Resources.Limits.Memory().IsZero() {
		t.Errorf("no resource limits: %+v", main.Resources)
	}
	if len(pod.Spec.InitContainers) == 0 || pod.Spec.InitContainers[0].Image != "example.com/sandpod:test" {
		t.Fatalf("agent install init container missing: %+v", pod.Spec.InitContainers)
	}
	want := []string{sandbox.AgentBinary, "agent"}
	if len(main.Command) < 2 || main.Command[0] != want[0] || main.Command[1] != want[1] {
		t.Errorf("main command = %v, want the agent first", main.Command)
	}
	if last := main.Command[len(main.Command)-2:]; last[0] != "sleep" || last[1] != "infinity" {
		t.Errorf("agent does not supervise the template command: %v", main.Command)
	}
}

// A sandbox with a sidecar before its sandbox container: the agent goes into
// the container agentContainer names, the sidecar runs as written.
func TestSandboxAgentContainerWithSidecar(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{Options: optsAgent("example.com/sandpod:test")})
	sb := makeSandbox(ns, "side")
	sb.Spec.PodTemplate.Spec.Containers = append([]corev1.Container{{
		Name: "cache", Image: "python:3.13-slim", Command: []string{"python3", "-m", "http.server", "8000"},
	}}, sb.Spec.PodTemplate.Spec.Containers...)
	sb.Spec.AgentContainer = "main"
	create(t, sb)
	pod := waitPod(t, ns, "side", "created", func(_ *corev1.Pod, err error) bool { return err == nil })
	if len(pod.Spec.Containers) != 2 {
		t.Fatalf("containers = %d, want the sidecar and the sandbox container", len(pod.Spec.Containers))
	}
	cache, main := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if cache.Name != "cache" || strings.Join(cache.Command, " ") != "python3 -m http.server 8000" {
		t.Errorf("sidecar = %s %v, want it as the template wrote it", cache.Name, cache.Command)
	}
	if main.Name != "main" || len(main.Command) < 2 || main.Command[0] != sandbox.AgentBinary {
		t.Errorf("sandbox container = %s %v, want the agent first", main.Name, main.Command)
	}
}

// A pod whose agent trusts another bridge CA (sandpod reinstalled after its
// namespace, and the CA in it, went) is replaced: the bridge and that agent
// would refuse each other. The volumes stay.
func TestPodOfAnotherAgentCAIsReplaced(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, withStorage(makeSandbox(ns, "reinstalled")))
	waitSandbox(t, ns, "reinstalled", "running", phaseIs(v1alpha1.SandboxRunning))
	old := &corev1.Pod{}
	if err := env.Get(old, ns, "reinstalled"); err != nil {
		t.Fatal(err)
	}
	if old.Labels[v1alpha1.LabelAgentCA] == "" {
		t.Fatalf("pod labels %v: no %s", old.Labels, v1alpha1.LabelAgentCA)
	}
	// As an earlier installation's CA would have labelled it.
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.LabelAgentCA, strings.Repeat("0", 32))
	if err := env.Client.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, ns, "reinstalled", "replaced", func(p *corev1.Pod, err error) bool {
		return err == nil && p.UID != old.UID && p.DeletionTimestamp == nil
	})
	if pod.Labels[v1alpha1.LabelAgentCA] == strings.Repeat("0", 32) || !podMountsPVC(pod, "data-reinstalled") {
		t.Errorf("new pod: labels %v, volumes %+v; want this controller's CA and the same PVC", pod.Labels, pod.Spec.Volumes)
	}
	waitSandbox(t, ns, "reinstalled", "running again", func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.Phase == v1alpha1.SandboxRunning && isReady(sb)
	})
}

func TestSandboxDeletedPodIsRecreatedWithSameIdentity(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, withStorage(makeSandbox(ns, "phoenix")))
	waitSandbox(t, ns, "phoenix", "running", phaseIs(v1alpha1.SandboxRunning))
	old := &corev1.Pod{}
	if err := env.Get(old, ns, "phoenix"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, ns, "phoenix", "recreated", func(p *corev1.Pod, err error) bool {
		return err == nil && p.UID != old.UID && p.DeletionTimestamp == nil
	})
	if pod.Spec.Hostname != "phoenix" || !podMountsPVC(pod, "data-phoenix") {
		t.Errorf("new pod lost its identity: hostname=%q volumes=%+v", pod.Spec.Hostname, pod.Spec.Volumes)
	}
	waitSandbox(t, ns, "phoenix", "running again", func(sb *v1alpha1.Sandbox) bool {
		return sb.Status.Phase == v1alpha1.SandboxRunning && isReady(sb)
	})
}

func TestSandboxSuspendKeepsStorageAndResumeRecreates(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, withStorage(makeSandbox(ns, "nap")))
	waitSandbox(t, ns, "nap", "running", phaseIs(v1alpha1.SandboxRunning))
	pvc := &corev1.PersistentVolumeClaim{}
	if err := env.Get(pvc, ns, "data-nap"); err != nil {
		t.Fatal(err)
	}

	setMode(t, ns, "nap", v1alpha1.OperatingModeSuspended)
	waitSandbox(t, ns, "nap", "suspended", phaseIs(v1alpha1.SandboxSuspended))
	waitGone(t, &corev1.Pod{}, ns, "nap")
	kept := &corev1.PersistentVolumeClaim{}
	if err := env.Get(kept, ns, "data-nap"); err != nil || kept.UID != pvc.UID {
		t.Fatalf("pvc not kept across suspend: err=%v", err)
	}

	setMode(t, ns, "nap", v1alpha1.OperatingModeRunning)
	waitSandbox(t, ns, "nap", "resumed", phaseIs(v1alpha1.SandboxRunning))
	pod := waitPod(t, ns, "nap", "recreated", func(_ *corev1.Pod, err error) bool { return err == nil })
	if !podMountsPVC(pod, "data-nap") {
		t.Errorf("resumed pod does not mount the kept pvc")
	}
}

// operatingMode Paused (the bridge sets it once the agent has stopped the
// sandbox's processes) keeps the pod, and the controller reports phase
// Paused with the Paused condition; Running makes it Running again on the
// same pod.
func TestSandboxPausedKeepsItsPod(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	create(t, makeSandbox(ns, "still"))
	waitSandbox(t, ns, "still", "running", phaseIs(v1alpha1.SandboxRunning))
	before := waitPod(t, ns, "still", "running", func(_ *corev1.Pod, err error) bool { return err == nil })

	setMode(t, ns, "still", v1alpha1.OperatingModePaused)
	waitSandbox(t, ns, "still", "paused", func(sb *v1alpha1.Sandbox) bool {
		c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionPaused)
		return sb.Status.Phase == v1alpha1.SandboxPaused && c != nil && c.Status == metav1.ConditionTrue && !isReady(sb)
	})
	setMode(t, ns, "still", v1alpha1.OperatingModeRunning)
	waitSandbox(t, ns, "still", "running again", func(sb *v1alpha1.Sandbox) bool {
		c := meta.FindStatusCondition(sb.Status.Conditions, v1alpha1.ConditionPaused)
		return sb.Status.Phase == v1alpha1.SandboxRunning && c != nil && c.Status == metav1.ConditionFalse && isReady(sb)
	})
	after := &corev1.Pod{}
	if err := env.Get(after, ns, "still"); err != nil || after.UID != before.UID {
		t.Fatalf("the pod was replaced across pause (err=%v)", err)
	}
}

func TestSandboxShutdownDeleteAndRetain(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	soon := metav1.NewTime(time.Now().Add(3 * time.Second))
	del := makeSandbox(ns, "ends")
	del.Spec.Lifecycle = v1alpha1.Lifecycle{ShutdownTime: &soon, ShutdownPolicy: v1alpha1.ShutdownPolicyDelete}
	keep := withStorage(makeSandbox(ns, "stays"))
	keep.Spec.Lifecycle = v1alpha1.Lifecycle{ShutdownTime: &soon, ShutdownPolicy: v1alpha1.ShutdownPolicyRetain}
	create(t, del, keep)

	// Delete: the sandbox goes, and with it its pod.
	waitGone(t, &v1alpha1.Sandbox{}, ns, "ends")
	waitGone(t, &corev1.Pod{}, ns, "ends")

	// Retain: the sandbox stays Expired, its pod goes, its storage stays.
	sb := waitSandbox(t, ns, "stays", "expired", phaseIs(v1alpha1.SandboxExpired))
	if !conditionTrue(sb.Status.Conditions, v1alpha1.ConditionExpired) || !conditionTrue(sb.Status.Conditions, v1alpha1.ConditionFinished) {
		t.Errorf("conditions = %+v, want Expired and Finished", sb.Status.Conditions)
	}
	waitGone(t, &corev1.Pod{}, ns, "stays")
	if err := env.Get(&corev1.PersistentVolumeClaim{}, ns, "data-stays"); err != nil {
		t.Errorf("retained sandbox lost its pvc: %v", err)
	}
}

func TestSandboxDeletionRemovesChildren(t *testing.T) {
	ns := setup(t, harness.ManagerOptions{})
	sb := withStorage(makeSandbox(ns, "bye"))
	sb.Spec.Service = true
	create(t, sb)
	waitSandbox(t, ns, "bye", "running", phaseIs(v1alpha1.SandboxRunning))
	if err := env.Client.Delete(ctx, sb); err != nil {
		t.Fatal(err)
	}
	waitGone(t, &corev1.Pod{}, ns, "bye")
	waitGone(t, &corev1.Service{}, ns, "bye")
	harness.Eventually(t, harness.Timeout, "pvc deletion requested", func() (bool, string) {
		pvc := &corev1.PersistentVolumeClaim{}
		err := env.Get(pvc, ns, "data-bye")
		// No pvc-protection controller runs here, so the PVC may linger
		// with a deletion timestamp; deletion having been asked is the promise.
		return isNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil), fmt.Sprintf("err=%v", err)
	})
}

func setMode(t *testing.T, ns, name string, m v1alpha1.OperatingMode) {
	t.Helper()
	sb := &v1alpha1.Sandbox{}
	if err := env.Get(sb, ns, name); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"operatingMode":%q}}`, m)))
	if err := env.Client.Patch(ctx, sb, patch); err != nil {
		t.Fatalf("set mode %s: %v", m, err)
	}
}

func podMountsPVC(pod *corev1.Pod, claim string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

func conditionTrue(cs []metav1.Condition, t string) bool {
	for _, c := range cs {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
