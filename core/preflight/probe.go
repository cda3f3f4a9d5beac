package preflight

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ProbeOptions configure the probe pods.
type ProbeOptions struct {
	// Image holds the sandpod binary at Binary (the sandpod image).
	Image, Binary string
	// Namespace to run them in; empty: a temporary namespace, deleted after.
	Namespace string
	// Timeout bounds all probes together (default 2m).
	Timeout time.Duration
}

// LabelProbe marks the probe pods and the temporary namespace.
const LabelProbe = "sandpod.dev/preflight"

// probePort is where the NetworkPolicy probe's server listens.
const probePort = 8080

// blockedWithin is how long the client keeps trying after the deny
// policy: an enforcer needs a moment to program it.
const blockedWithin = 20 * time.Second

// runProbes runs the DNS and NetworkPolicy probe pods, then deletes them
// (and the temporary namespace). Every wait is bounded by Probe.Timeout.
func runProbes(ctx context.Context, cs kubernetes.Interface, o Options) (*DNSProbe, *NetPolProbe) {
	p := o.Probe
	if p.Timeout <= 0 {
		p.Timeout = 2 * time.Minute
	}
	dns := &DNSProbe{Name: "kubernetes.default.svc." + o.ClusterDomain + "."}
	np := &NetPolProbe{}
	fail := func(err error) (*DNSProbe, *NetPolProbe) {
		dns.Error, np.Error = err.Error(), err.Error()
		return dns, np
	}
	if svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
		dns.Want = svc.Spec.ClusterIP
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()

	id := randomID()
	ns := p.Namespace
	if ns == "" {
		n, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "sandpod-preflight-", Labels: map[string]string{LabelProbe: id},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fail(fmt.Errorf("create a probe namespace: %w", err))
		}
		ns = n.Name
		defer func() {
			// The pods go at once (the namespace's deletion would take them
			// only when its controller gets to it), then the namespace with
			// the policy.
			cleanup(cs, ns, id)
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			_ = cs.CoreV1().Namespaces().Delete(cctx, ns, metav1.DeleteOptions{})
		}()
		// Pods are admitted once the namespace's default service account
		// exists (the controller manager makes it a moment later).
		if err := waitDefaultSA(ctx, cs, ns); err != nil {
			return fail(err)
		}
	} else {
		defer cleanup(cs, ns, id)
	}
	if ok, err := mayCreate(ctx, cs, ns, "", "pods"); err == nil && !ok {
		return fail(fmt.Errorf("preflight may not create pods in %s", ns))
	}

	pods := cs.CoreV1().Pods(ns)
	mk := func(role string, args ...string) (*corev1.Pod, error) {
		return pods.Create(ctx, probePod(p, id, role, args...), metav1.CreateOptions{})
	}
	// DNS and the server start together.
	if _, err := mk("dns", "--dns", dns.Name); err != nil {
		return fail(fmt.Errorf("create the DNS probe pod: %w", err))
	}
	if _, err := mk("server", "--listen", fmt.Sprintf(":%d", probePort)); err != nil {
		return fail(fmt.Errorf("create the server probe pod: %w", err))
	}
	server, err := waitPod(ctx, cs, ns, probeName(id, "server"), func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && podReady(p)
	})
	if err != nil {
		np.Error = "server: " + err.Error()
	} else {
		netpolProbe(ctx, cs, p, ns, id, server.Status.PodIP, np)
	}
	if done, err := waitPod(ctx, cs, ns, probeName(id, "dns"), finished); err != nil {
		dns.Error = err.Error()
	} else {
		out := podLog(ctx, cs, ns, done.Name)
		for _, l := range strings.Split(out, "\n") {
			if a, ok := strings.CutPrefix(l, "address "); ok {
				dns.Addresses = append(dns.Addresses, strings.TrimSpace(a))
			} else if e, ok := strings.CutPrefix(l, "error "); ok {
				dns.Error = strings.TrimSpace(e)
			}
		}
		if len(dns.Addresses) == 0 && dns.Error == "" {
			dns.Error = "the probe pod said nothing (" + exitOf(done) + ")"
		}
	}
	return dns, np
}

// netpolProbe: a client connects to the server; then a policy denies the
// server all ingress and a second client must be kept out.
func netpolProbe(ctx context.Context, cs kubernetes.Interface, p ProbeOptions, ns, id, ip string, np *NetPolProbe) {
	addr := net.JoinHostPort(ip, fmt.Sprint(probePort))
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, probePod(p, id, "open", "--connect", addr, "--expect", "open", "--within", "20s"), metav1.CreateOptions{}); err != nil {
		np.Error = "create the client probe pod: " + err.Error()
		return
	}
	open, err := waitPod(ctx, cs, ns, probeName(id, "open"), finished)
	if err != nil {
		np.Error = "client: " + err.Error()
		return
	}
	np.Open = open.Status.Phase == corev1.PodSucceeded
	if !np.Open {
		return
	}
	_, err = cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: probeName(id, "deny"), Labels: map[string]string{LabelProbe: id}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelProbe: id, LabelProbe + "-role": "server"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		np.Error = "create the deny policy: " + err.Error()
		return
	}
	start := time.Now()
	if _, err := pods.Create(ctx, probePod(p, id, "blocked", "--connect", addr, "--expect", "blocked", "--within", blockedWithin.String()), metav1.CreateOptions{}); err != nil {
		np.Error = "create the second client probe pod: " + err.Error()
		return
	}
	blocked, err := waitPod(ctx, cs, ns, probeName(id, "blocked"), finished)
	if err != nil {
		np.Error = "second client: " + err.Error()
		return
	}
	np.Blocked = blocked.Status.Phase == corev1.PodSucceeded
	np.Waited = blockedWithin.String()
	if np.Blocked {
		np.Waited = since(start)
	}
}

func probeName(id, role string) string { return "sandpod-preflight-" + id + "-" + role }

// probePod runs `sandpod preflight probe ARGS` once, locked down so that it
// is admitted under the restricted Pod Security Standard.
func probePod(p ProbeOptions, id, role string, args ...string) *corev1.Pod {
	bin := p.Binary
	if bin == "" {
		bin = "/usr/local/bin/sandpod"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   probeName(id, role),
			Labels: map[string]string{LabelProbe: id, LabelProbe + "-role": role, "app.kubernetes.io/name": "sandpod-preflight"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			ActiveDeadlineSeconds:         ptr.To[int64](int64((p.Timeout + time.Minute).Seconds())),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "probe", Image: p.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: append([]string{bin, "preflight", "probe"}, args...),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if role == "server" {
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: probePort}}
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrPort(probePort)}},
			PeriodSeconds: 1,
		}
	}
	return pod
}

func waitDefaultSA(ctx context.Context, cs kubernetes.Interface, ns string) error {
	for {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s has no default service account: %v", ns, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPod polls a pod until cond holds or ctx ends; the error then says
// what the pod was waiting for.
func waitPod(ctx context.Context, cs kubernetes.Interface, ns, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s: %s (gave up: %v)", ns, name, podState(last), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// podState says why a pod is not there yet, for the report.
func podState(p *corev1.Pod) string {
	if p == nil {
		return "not found"
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return "waiting: " + w.Reason + " " + w.Message
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return string(c.Type) + ": " + c.Message
		}
	}
	return "phase " + string(p.Status.Phase)
}

func exitOf(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("exit %d %s", t.ExitCode, t.Reason)
		}
	}
	return "phase " + string(p.Status.Phase)
}

func podLog(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{LimitBytes: ptr.To[int64](16 << 10)}).DoRaw(ctx)
	if err != nil {
		return "error reading the probe's log: " + err.Error()
	}
	return string(b)
}

// cleanup deletes the probe pods and policy of run id from a namespace
// preflight did not make.
func cleanup(cs kubernetes.Interface, ns, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: LabelProbe + "=" + id}
	_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, sel)
	_ = cs.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
}

func randomID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
