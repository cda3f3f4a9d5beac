package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandpod "github.com/sandpod/sandpod/clients/go"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// The node bed enforces NetworkPolicy (kube-router's firewall, see
// hack/testbed/up.sh); these tests show that sandpod's managed policies do
// what docs/security.md says, from inside real sandboxes. Every probe is a
// TCP connect with a 3 s timeout; a port counts as reachable when the
// connection opens. Each refusal has a control that reaches the same
// address and port from a pod without a policy, so a broken network cannot
// pass for an enforced one. All traffic stays on the bed.

// probeScript connects to argv[1]:argv[2] and prints "open" or "closed <why>".
const probeScript = `import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("open")
except OSError as e:
    print("closed", e)
`

// serverScript listens on every port in argv, accepting and closing.
const serverScript = `import socket, sys, threading
def serve(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        c.close()
for p in sys.argv[1:]:
    threading.Thread(target=serve, args=(int(p),), daemon=True).start()
threading.Event().wait()
`

// target is a plain pod (no sandbox, no policy selects it) that listens on
// 8080 and 8081; it also probes, as the control.
type target struct {
	name, ip string
}

func (e *Env) startTarget(t *testing.T, ns, name string) target {
	t.Helper()
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "netpol-target"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "main", Image: PythonImage, Command: []string{"python3", "-c", serverScript, "8080", "8081"},
			}},
		},
	}
	if err := e.Client.Create(context.Background(), pod); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	e.Eventually(t, "pod "+name+" running with an IP", func() (bool, string) {
		if err := e.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "", string(pod.Status.Phase)
	})
	tg := target{name: name, ip: pod.Status.PodIP}
	// From the node (which every policy lets through): both ports listen.
	for _, port := range []int{8080, 8081} {
		e.Eventually(t, fmt.Sprintf("%s:%d listening", name, port), func() (bool, string) {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(tg.ip, fmt.Sprint(port)), 3*time.Second)
			if err != nil {
				return false, err.Error()
			}
			_ = c.Close()
			return true, ""
		})
	}
	return tg
}

// prober is something a probe runs in: a sandbox (through the bridge) or
// a target pod (through kubectl exec).
type prober struct {
	name string
	run  func(ctx context.Context, host string, port int) (string, error)
}

func sandboxProber(sb *sandpod.Sandbox) prober {
	return prober{name: "sandbox " + sb.Name(), run: func(ctx context.Context, host string, port int) (string, error) {
		res, err := sb.RunArgv(ctx, []string{"python3", "-c", probeScript, host, fmt.Sprint(port)})
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(res.Stdout)), nil
	}}
}

func (e *Env) podProber(ns string, tg target) prober {
	return prober{name: "pod " + tg.name, run: func(ctx context.Context, host string, port int) (string, error) {
		out, err := e.PodExec(ctx, ns, tg.name, "main", "python3", "-c", probeScript, host, fmt.Sprint(port))
		return strings.TrimSpace(out), err
	}}
}

// reach is one expectation: from, to host:port, open or not.
type reach struct {
	from prober
	what string
	host string
	port int
	open bool
}

func (r reach) String() string {
	verb := "cannot reach"
	if r.open {
		verb = "reaches"
	}
	return fmt.Sprintf("%s %s %s (%s)", r.from.name, verb, r.what, net.JoinHostPort(r.host, fmt.Sprint(r.port)))
}

// check waits until r holds (the enforcer applies a policy some time after
// the pod or the policy appears), then checks it once more at the end
// (checkAll), so a rule that comes and goes is caught.
func (e *Env) check(t *testing.T, ctx context.Context, r reach) bool {
	t.Helper()
	ok, got := false, ""
	cctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_ = poll(cctx, func() (bool, string) {
		out, err := r.from.run(cctx, r.host, r.port)
		if err != nil {
			got = "probe failed: " + err.Error()
			return false, got
		}
		got = out
		ok = (out == "open") == r.open && (out == "open" || strings.HasPrefix(out, "closed"))
		return ok, out
	})
	if !ok {
		t.Errorf("%s: last probe said %q", r, got)
	}
	return ok
}

func (e *Env) checkAll(t *testing.T, ctx context.Context, rs []reach) {
	t.Helper()
	for _, r := range rs {
		e.check(t, ctx, r)
	}
	for _, r := range rs { // once more, without waiting
		out, err := r.from.run(ctx, r.host, r.port)
		if err != nil || (out == "open") != r.open {
			t.Errorf("again: %s: %q, %v", r, out, err)
		}
	}
}

// apiServer is the API server as a pod sees it: the kubernetes Service's
// ClusterIP and port, and its endpoint (on the bed, the node's address).
func (e *Env) apiServer(t *testing.T) (svcIP string, svcPort int, epIP string, epPort int) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, es); err != nil {
		t.Fatal(err)
	}
	if len(es.Endpoints) == 0 || len(es.Endpoints[0].Addresses) == 0 || len(es.Ports) == 0 || es.Ports[0].Port == nil {
		t.Fatalf("endpoint slice default/kubernetes: %+v", es)
	}
	return svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), es.Endpoints[0].Addresses[0], int(*es.Ports[0].Port)
}

// TestNetworkPolicyIsEnforced: with the managed NetworkPolicy on an
// enforcing cluster, a sandbox reaches neither another sandbox nor the API
// server (by its Service or its address), egress: None reaches nothing (not
// even a pod), an allowlisted CIDR and port are reachable and nothing else
// is, and the bridge still reaches every agent: the probes themselves run
// through it (claim, then exec).
func TestNetworkPolicyIsEnforced(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	ctx := Context(t)

	tgt := env.startTarget(t, ns, "target")
	other := env.startTarget(t, ns, "other")
	svcIP, svcPort, epIP, epPort := env.apiServer(t)
	// The bed's pods are in 10.244.0.0/24 (kube-proxy's cluster CIDR is the
	// /16 around it); the Node carries no podCIDR (no CIDR allocator runs).
	podNet := netip.PrefixFrom(netip.MustParseAddr(tgt.ip), 16).Masked().String()

	open := Template(ns, "open", PythonImage) // egress: Internet (the default)
	closed := Template(ns, "closed", PythonImage)
	closed.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone}
	allow := Template(ns, "allow", PythonImage)
	allow.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{
		{CIDR: tgt.ip + "/32", Ports: []int32{8080}},
		// Every pod's agent port: what stops this one is the other
		// sandbox's ingress rule (only bridge pods), not this egress.
		{CIDR: podNet, Ports: []int32{v1alpha1.AgentPort}},
	}}
	env.Apply(t, open, closed, allow)

	c := env.bridgeClient(t, ns)
	claim := func(template string) (*sandpod.Sandbox, string) {
		sb, err := c.Claim(ctx, template)
		if err != nil {
			t.Fatalf("claim %s through the bridge: %v", template, err)
		}
		res, err := sb.Run(ctx, "echo agent")
		if err != nil || string(res.Stdout) != "agent\n" {
			t.Fatalf("exec in %s through the bridge: %+v, %v", template, res, err)
		}
		obj := &v1alpha1.Sandbox{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: sb.Name()}, obj); err != nil || len(obj.Status.PodIPs) == 0 {
			t.Fatalf("sandbox %s: %v (%+v)", sb.Name(), err, obj.Status)
		}
		return sb, obj.Status.PodIPs[0]
	}
	openSB, openIP := claim("open")
	closedSB, closedIP := claim("closed")
	allowSB, _ := claim("allow")
	fromOpen, fromClosed, fromAllow, control := sandboxProber(openSB), sandboxProber(closedSB), sandboxProber(allowSB), env.podProber(ns, other)

	agent := int(v1alpha1.AgentPort)
	env.checkAll(t, ctx, []reach{
		// Controls: a pod without a policy reaches all of these.
		{control, "the target", tgt.ip, 8080, true},
		{control, "the target's other port", tgt.ip, 8081, true},
		{control, "the API server's Service", svcIP, svcPort, true},
		{control, "the API server's address", epIP, epPort, true},

		// egress: Internet: no cluster-internal range, no API server.
		{fromOpen, "a pod", tgt.ip, 8080, false},
		{fromOpen, "another sandbox's agent", closedIP, agent, false},
		{fromOpen, "the API server's Service", svcIP, svcPort, false},
		{fromOpen, "the API server's address", epIP, epPort, false},

		// egress: None: nothing.
		{fromClosed, "a pod", tgt.ip, 8080, false},
		{fromClosed, "another pod", other.ip, 8080, false},
		{fromClosed, "another sandbox's agent", openIP, agent, false},
		{fromClosed, "the API server's Service", svcIP, svcPort, false},
		{fromClosed, "the API server's address", epIP, epPort, false},

		// egress: Allowlist: the allowlisted CIDR on its port, nothing else.
		{fromAllow, "the allowlisted target", tgt.ip, 8080, true},
		{fromAllow, "a port the allowlist does not name", tgt.ip, 8081, false},
		{fromAllow, "a pod outside the allowlisted CIDR", other.ip, 8080, false},
		{fromAllow, "another sandbox's agent (its ingress admits bridges only)", openIP, agent, false},
		{fromAllow, "the API server's Service", svcIP, svcPort, false},
		{fromAllow, "the API server's address", epIP, epPort, false},
	})

	// And the bridge still reaches every agent after all that.
	for _, sb := range []*sandpod.Sandbox{openSB, closedSB, allowSB} {
		if res, err := sb.Run(ctx, "echo still"); err != nil || string(res.Stdout) != "still\n" {
			t.Errorf("exec in %s through the bridge afterwards: %+v, %v", sb.Name(), res, err)
		}
	}
}

// TestNetworkPolicyAllowlistValidation: the CRD refuses an allowlist entry
// that is not a CIDR and an allowlist without egress: Allowlist; what its
// schema cannot see (host bits set) the controller reports on the
// template's Ready condition, and the managed policy then has no egress.
func TestNetworkPolicyAllowlistValidation(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	ctx := Context(t)

	refused := map[string]*v1alpha1.NetworkPolicySpec{
		"not a CIDR":        {Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.1"}}},
		"port 0":            {Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8", Ports: []int32{0}}}},
		"rules with None":   {Egress: v1alpha1.EgressNone, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8"}}},
		"allowlist, empty":  {Egress: v1alpha1.EgressAllowlist},
		"an unknown egress": {Egress: "Everything"},
	}
	for what, np := range refused {
		tmpl := Template(ns, "bad", PythonImage)
		tmpl.Spec.NetworkPolicy = np
		if err := env.Client.Create(ctx, tmpl); err == nil {
			t.Errorf("%s: the API server took %+v", what, np)
			_ = env.Client.Delete(ctx, tmpl)
		}
	}

	tmpl := Template(ns, "hostbits", PythonImage)
	tmpl.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist,
		AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.244.0.1/16"}}}
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, "template hostbits reported invalid", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(tmpl.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonInvalidSpec &&
			strings.Contains(c.Message, "did you mean 10.244.0.0/16"), fmt.Sprintf("%+v", c)
	})
	np := &networkingv1.NetworkPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sandpod-hostbits"}, np); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("policy of an invalid allowlist: egress %+v, types %v; want no egress", np.Spec.Egress, np.Spec.PolicyTypes)
	}
}
