package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// resolveAndConnect is run by python3 in a pod: it resolves argv[1] with the
// pod's resolver (the cluster DNS) and opens a TCP connection to it on
// argv[2] (a port number; 0: resolve only), printing the address.
const resolveAndConnect = `import socket, sys
ip = socket.getaddrinfo(sys.argv[1], None, socket.AF_INET)[0][4][0]
if int(sys.argv[2]):
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
print(ip)`

// TestClusterDNS: a sandbox with a service has a stable DNS name in the
// cluster (status.serviceFQDN, its headless Service): another pod resolves
// it to the sandbox's pod and connects to it, and after the pod is replaced
// (deleted; the controller makes it again with the same identity) the same
// name resolves to the new pod. A sandbox under its template's managed
// NetworkPolicy resolves it too (the policy lets sandboxes reach DNS in
// kube-system).
func TestClusterDNS(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	ctx := Context(t)

	// The target's template turns its managed NetworkPolicy off: that policy
	// lets only the bridge in, and this test is about names, not policy.
	target := Template(ns, "target", PythonImage)
	target.Spec.Service = true
	off := false
	target.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Managed: &off}
	env.Apply(t, target, Template(ns, "python", PythonImage))

	client1 := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns-client"},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "main", Image: PythonImage, Command: []string{"sleep", "3600"}}},
			AutomountServiceAccountToken: new(bool), TerminationGracePeriodSeconds: new(int64),
		},
	}
	if err := env.Client.Create(ctx, client1); err != nil {
		t.Fatal(err)
	}
	_, sb := env.Claim(t, ns, "target", "target")
	fqdn := sb.Status.ServiceFQDN
	if want := sb.Name + "." + ns + ".svc.cluster.local"; fqdn != want {
		t.Fatalf("status.serviceFQDN = %q, want %q", fqdn, want)
	}
	env.Eventually(t, "the client pod running", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(client1), client1)
		return err == nil && client1.Status.Phase == corev1.PodRunning, fmt.Sprintf("phase %s, %v", client1.Status.Phase, err)
	})

	// resolvesTo polls until name resolves (and connects) to the sandbox's
	// current pod IP: the DNS answer may lag the endpoints by its TTL (5s).
	resolvesTo := func(what string, sb *v1alpha1.Sandbox) {
		t.Helper()
		want := sb.Status.PodIPs[0]
		env.Eventually(t, what, func() (bool, string) {
			callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			out, err := env.PodExec(callCtx, ns, client1.Name, "", "python3", "-c", resolveAndConnect, fqdn, fmt.Sprint(v1alpha1.AgentPort))
			got := strings.TrimSpace(out)
			return err == nil && got == want, fmt.Sprintf("resolved %q, want %s (%v)", got, want, err)
		})
	}
	resolvesTo(fqdn+" from another pod", sb)

	// From a sandbox under the default managed NetworkPolicy: resolve only
	// (that policy keeps sandboxes from connecting to cluster addresses).
	_, other := env.Claim(t, ns, "other", "python")
	agent := env.Agent(t, other)
	env.Eventually(t, fqdn+" from a sandbox under its managed policy", func() (bool, string) {
		res, err := agent.Shell(ctx, fmt.Sprintf("python3 -c '%s' %s 0", resolveAndConnect, fqdn))
		got := strings.TrimSpace(res.Stdout)
		return err == nil && got == sb.Status.PodIPs[0], fmt.Sprintf("resolved %q (exit %d, %s), want %s (%v)", got, res.ExitCode, res.Stderr, sb.Status.PodIPs[0], err)
	})

	// Replace the pod: the controller makes it again with the same name;
	// the name follows it to its new IP.
	before := env.Pod(t, sb)
	if err := env.Client.Delete(ctx, before); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "a new pod for the sandbox", func() (bool, string) {
		pod := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: before.Name}, pod)
		return err == nil && pod.UID != before.UID && pod.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	var after *v1alpha1.Sandbox
	env.Eventually(t, "the sandbox ready on its new pod", func() (bool, string) {
		after = env.WaitSandboxReady(t, ns, sb.Name)
		pod := env.Pod(t, after)
		return pod.UID != before.UID && len(pod.Status.PodIPs) > 0 && after.Status.PodIPs[0] == pod.Status.PodIPs[0].IP,
			fmt.Sprintf("pod %s, status IPs %v", pod.UID, after.Status.PodIPs)
	})
	t.Logf("pod IP before %s, after %s", sb.Status.PodIPs[0], after.Status.PodIPs[0])
	if after.Status.ServiceFQDN != fqdn {
		t.Errorf("serviceFQDN after the pod was replaced: %q, want %q", after.Status.ServiceFQDN, fqdn)
	}
	resolvesTo(fqdn+" after the pod was replaced", after)
}
