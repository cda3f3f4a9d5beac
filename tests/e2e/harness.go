// Package e2e checks sandpod end to end on a real single-node Kubernetes
// (hack/testbed): real pods under runc and gVisor, the controller installed
// from deploy/install.yaml like a user would, the agent serving in its pod.
//
// The tests run only when SANDPOD_E2E_KUBECONFIG names the cluster's admin
// kubeconfig (`make e2e` brings a bed up, installs sandpod and sets it);
// otherwise they skip, so `go test ./...` stays quick.
//
// The harness is meant to be shared by the tests of every component (the
// controller today; the bridge and its clients next): a fresh namespace per
// test, cleaned up when it ends (sandboxes gone first, then the namespace,
// then the node bed's PVs it used made Available again), templates and pools
// applied with server-side apply, exec through the pods/exec subresource
// (kubectl) and through the sandbox's agent (gRPC to the pod IP), and the
// address of a Service's ClusterIP, which the node bed routes from the host.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/agentconn/kubeca"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// Environment variables the suite reads.
const (
	// EnvKubeconfig names the admin kubeconfig of the cluster under test.
	EnvKubeconfig = "SANDPOD_E2E_KUBECONFIG"
	// EnvKubectl names the kubectl binary (default: kubectl on PATH).
	EnvKubectl = "SANDPOD_E2E_KUBECTL"
	// EnvLogs names a directory for the diagnostics of failed tests.
	EnvLogs = "SANDPOD_E2E_LOGS"
	// EnvKeep keeps a failed test's namespace (for a look with kubectl).
	EnvKeep = "SANDPOD_E2E_KEEP"
)

// Images of the node bed (hack/testbed/images.sh imports them).
const (
	PythonImage  = "ghcr.io/sandpod/python:3.11"
	SandpodImage = "ghcr.io/sandpod/sandpod:latest"
	// GVisor is the node bed's RuntimeClass for gVisor (handler runsc).
	GVisor = "gvisor"
	// TestbedStorageClass is the default StorageClass of the node bed; its
	// PVs (hostPath, reclaim policy Retain) are freed by the harness.
	TestbedStorageClass = "sandpod-testbed"
)

// Timeout bounds every wait: a pod on the node bed is Ready in seconds, but
// the machine is small and shared.
var Timeout = 3 * time.Minute

const skipMessage = EnvKubeconfig + " is not set: run `make e2e` (brings the hack/testbed cluster up, installs sandpod, runs this suite)"

// Env is the cluster under test.
type Env struct {
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client // live (uncached) client with sandpod's scheme
	Clientset  kubernetes.Interface
	Kubectl    string
}

var (
	envOnce sync.Once
	envVal  *Env
	envErr  error
)

// Setup returns the cluster under test, or skips t when there is none.
func Setup(t testing.TB) *Env {
	t.Helper()
	path := os.Getenv(EnvKubeconfig)
	if path == "" {
		t.Skip(skipMessage)
	}
	envOnce.Do(func() { envVal, envErr = connect(path) })
	if envErr != nil {
		t.Fatalf("e2e cluster: %v", envErr)
	}
	return envVal
}

func connect(path string) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	scheme, err := controller.NewScheme()
	if err != nil {
		return nil, err
	}
	e := &Env{Kubeconfig: path, Config: cfg, Kubectl: os.Getenv(EnvKubectl)}
	if e.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if e.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.Kubectl == "" {
		if e.Kubectl, err = exec.LookPath("kubectl"); err != nil {
			return nil, fmt.Errorf("no kubectl: set %s", EnvKubectl)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Clientset.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("API server: %w", err)
	}
	// Leftovers of an earlier, interrupted run.
	e.FreeReleasedPVs(ctx, "")
	return e, nil
}

// Context is a context that ends with the test (or after Timeout*3).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout)
	t.Cleanup(cancel)
	return ctx
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a namespace for t and deletes it when t ends: its
// sandboxes first (so the controller's finalizers run while it is there),
// then the namespace, then the node bed's PVs its claims held are freed.
// A failed test's diagnostics are logged (and written under
// $SANDPOD_E2E_LOGS) first; SANDPOD_E2E_KEEP=1 keeps a failed test's
// namespace.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	base := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := "e2e-" + base + "-" + hex.EncodeToString(suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"sandpod.dev/e2e": "true"}}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.Diagnose(t, name)
			if os.Getenv(EnvKeep) != "" {
				t.Logf("kept namespace %s (%s)", name, EnvKeep)
				return
			}
		}
		e.deleteNamespace(t, name)
	})
	return name
}

func (e *Env) deleteNamespace(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*Timeout)
	defer cancel()
	if err := e.Client.DeleteAllOf(ctx, &v1alpha1.SandboxClaim{}, client.InNamespace(ns)); err != nil {
		t.Errorf("cleanup: delete claims: %v", err)
	}
	if err := e.Client.DeleteAllOf(ctx, &v1alpha1.SandboxWarmPool{}, client.InNamespace(ns)); err != nil {
		t.Errorf("cleanup: delete pools: %v", err)
	}
	if err := e.Client.DeleteAllOf(ctx, &v1alpha1.Sandbox{}, client.InNamespace(ns)); err != nil {
		t.Errorf("cleanup: delete sandboxes: %v", err)
	}
	err := poll(ctx, func() (bool, string) {
		l := &v1alpha1.SandboxList{}
		if err := e.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d sandboxes left", len(l.Items))
	})
	if err != nil {
		t.Errorf("cleanup: sandboxes of %s not gone: %v", ns, err)
	}
	if err := e.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: delete namespace: %v", err)
	}
	err = poll(ctx, func() (bool, string) {
		err := e.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), fmt.Sprintf("err=%v", err)
	})
	if err != nil {
		t.Errorf("cleanup: namespace %s not gone: %v", ns, err)
	}
	e.FreeReleasedPVs(ctx, ns)
}

// FreeReleasedPVs makes the node bed's Released PVs (whose claims were
// deleted; in namespace ns, or any when ns is "") Available again: their
// host directories are emptied, when this process sees them, and their
// claimRef cleared. The bed has no provisioner and its PVs keep their data
// (reclaim policy Retain), so without this it would run out of volumes.
func (e *Env) FreeReleasedPVs(ctx context.Context, ns string) {
	pvs := &corev1.PersistentVolumeList{}
	if err := e.Client.List(ctx, pvs, client.MatchingLabels{"sandpod.dev/testbed": "true"}); err != nil {
		return
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.ClaimRef == nil {
			continue
		}
		if ns != "" && pv.Spec.ClaimRef.Namespace != ns {
			continue
		}
		if hp := pv.Spec.HostPath; hp != nil {
			if entries, err := os.ReadDir(hp.Path); err == nil {
				for _, en := range entries {
					_ = os.RemoveAll(filepath.Join(hp.Path, en.Name()))
				}
			}
		}
		patch := []byte(`{"spec":{"claimRef":null}}`)
		_ = e.Client.Patch(ctx, pv, client.RawPatch(types.MergePatchType, patch))
	}
}

// --- objects

// PodTemplate is a sandbox pod of image with the agent as its only process.
func PodTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// Template is a SandboxTemplate of image (no runtime class: runc).
func Template(ns, name, image string) *v1alpha1.SandboxTemplate {
	return &v1alpha1.SandboxTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxTemplateSpec{PodTemplate: PodTemplate(image)},
	}
}

// WithVolume gives tmpl a 1Gi PVC (one of the node bed's hostPath PVs per
// sandbox) named name, mounted at mountPath in the sandbox container.
func WithVolume(tmpl *v1alpha1.SandboxTemplate, name, mountPath string) *v1alpha1.SandboxTemplate {
	tmpl.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	tmpl.Spec.PodTemplate.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: name, MountPath: mountPath}}
	return tmpl
}

// Pool is a SandboxWarmPool of template.
func Pool(ns, name, template string, replicas int32) *v1alpha1.SandboxWarmPool {
	return &v1alpha1.SandboxWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxWarmPool"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxWarmPoolSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}, Replicas: replicas},
	}
}

// Apply creates or updates objects with server-side apply (field manager
// sandpod-e2e, forced). Each object needs its TypeMeta set; its status is
// not applied.
func (e *Env) Apply(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatalf("apply %T %s: %v", o, o.GetName(), err)
		}
		u := &unstructured.Unstructured{Object: m}
		delete(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		if err := e.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner("sandpod-e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %T %s: %v", o, o.GetName(), err)
		}
	}
}

// Claim creates a SandboxClaim of template and waits until it holds a
// ready sandbox, which it returns with the claim.
func (e *Env) Claim(t testing.TB, ns, name, template string) (*v1alpha1.SandboxClaim, *v1alpha1.Sandbox) {
	t.Helper()
	c := &v1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.SandboxClaimSpec{TemplateRef: v1alpha1.TemplateRef{Name: template}},
	}
	if err := e.Client.Create(context.Background(), c); err != nil {
		t.Fatalf("create claim %s: %v", name, err)
	}
	e.Eventually(t, "claim "+name+" ready", func() (bool, string) {
		if err := e.Client.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return false, err.Error()
		}
		return c.Status.SandboxName != "" && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady),
			fmt.Sprintf("%+v", c.Status)
	})
	return c, e.WaitSandboxReady(t, ns, c.Status.SandboxName)
}

// WaitSandboxReady waits until a sandbox is Running and Ready, with its pod
// IP known.
func (e *Env) WaitSandboxReady(t testing.TB, ns, name string) *v1alpha1.Sandbox {
	t.Helper()
	sb := &v1alpha1.Sandbox{}
	e.Eventually(t, "sandbox "+name+" ready", func() (bool, string) {
		if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, sb); err != nil {
			return false, err.Error()
		}
		return sb.Status.Phase == v1alpha1.SandboxRunning && meta.IsStatusConditionTrue(sb.Status.Conditions, v1alpha1.ConditionReady) &&
				len(sb.Status.PodIPs) > 0,
			fmt.Sprintf("phase=%s message=%q conditions=%v", sb.Status.Phase, sb.Status.Message, sb.Status.Conditions)
	})
	return sb
}

// WaitPoolReady waits until a pool has ready members.
func (e *Env) WaitPoolReady(t testing.TB, ns, name string, ready int32) *v1alpha1.SandboxWarmPool {
	t.Helper()
	p := &v1alpha1.SandboxWarmPool{}
	e.Eventually(t, fmt.Sprintf("pool %s with %d ready", name, ready), func() (bool, string) {
		if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err.Error()
		}
		return p.Status.ReadyReplicas >= ready, fmt.Sprintf("%+v", p.Status)
	})
	return p
}

// Pod returns a sandbox's pod.
func (e *Env) Pod(t testing.TB, sb *v1alpha1.Sandbox) *corev1.Pod {
	t.Helper()
	name := sb.Status.PodName
	if name == "" {
		name = sb.Name
	}
	pod := &corev1.Pod{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: sb.Namespace, Name: name}, pod); err != nil {
		t.Fatalf("pod of sandbox %s: %v", sb.Name, err)
	}
	return pod
}

// --- waiting

// Eventually polls cond until it holds, failing t after Timeout with cond's
// last word.
func (e *Env) Eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := poll(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func poll(ctx context.Context, cond func() (bool, string)) error {
	var last string
	for {
		ok, msg := cond()
		if ok {
			return nil
		}
		last = msg
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %s", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// --- exec

// RunKubectl runs kubectl against the cluster and returns its stdout; an
// error carries its stderr.
func (e *Env) RunKubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.Kubectl, append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// PodExec runs argv in a pod's container through the pods/exec subresource
// (kubectl exec) and returns its stdout; an error carries its stderr.
func (e *Env) PodExec(ctx context.Context, ns, pod, container string, argv ...string) (string, error) {
	args := []string{"exec", "-n", ns, pod}
	if container != "" {
		args = append(args, "-c", container)
	}
	return e.RunKubectl(ctx, append(append(args, "--"), argv...)...)
}

// Agent is a gRPC connection to a sandbox's agent, straight to its pod IP
// (the node bed routes pod IPs from the host), as the bridge makes it: a
// client certificate minted from the agents' CA, for the sandbox's identity.
type Agent struct {
	Client sandpodv1.AgentServiceClient
	conn   *grpc.ClientConn
}

// AgentCA is the agents' bridge CA that the controller made in
// sandpod-system (read as the suite's admin, as the bridge reads it).
func (e *Env) AgentCA(t testing.TB) *agentconn.CA {
	t.Helper()
	sec := &corev1.Secret{}
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: agentconn.DefaultNamespace, Name: agentconn.CASecretName}, sec); err != nil {
		t.Fatalf("the agents' CA: %v", err)
	}
	ca, err := agentconn.ParseCA(sec.Data[agentconn.SecretKeyCACert], sec.Data[agentconn.SecretKeyCAKey])
	if err != nil {
		t.Fatalf("the agents' CA: %v", err)
	}
	return ca
}

// AgentTLS is the bridge's TLS to sb's agent, from the agents' CA, with
// the bridge's authentication of the agent (its identity token, reviewed by
// the API server).
func (e *Env) AgentTLS(t testing.TB, sb *v1alpha1.Sandbox) *tls.Config {
	t.Helper()
	ca := e.AgentCA(t)
	check := &agentconn.AgentCheck{CA: ca, Reviews: agentconn.NewReviews(kubeca.ReviewAgentToken(e.Client), v1alpha1.AgentTokenAudience, nil)}
	want := agentconn.Expect{Identity: agentconn.Identity(string(sb.UID)), Namespace: sb.Namespace, PodName: sb.Name}
	return agentconn.ClientConfig(want, agentconn.NewClientCerts(ca, nil).Get, check)
}

// Agent connects to sb's agent; the connection closes when t ends.
func (e *Env) Agent(t testing.TB, sb *v1alpha1.Sandbox) *Agent {
	t.Helper()
	if len(sb.Status.PodIPs) == 0 {
		t.Fatalf("sandbox %s has no pod IP", sb.Name)
	}
	pinned := e.AgentTLS(t, sb)
	target := net.JoinHostPort(sb.Status.PodIPs[0], fmt.Sprint(v1alpha1.AgentPort))
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(credentials.NewTLS(pinned)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: time.Second}}))
	if err != nil {
		t.Fatalf("dial agent %s: %v", target, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	// A sandbox is Ready once its container has started (there is no
	// readiness probe); its agent listens a few milliseconds later, or
	// seconds on a loaded bed (gVisor). The bridge waits for it the same
	// way. A connection that failed leaves the channel idle: connect again.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if s == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			t.Fatalf("agent %s of %s not reachable: %s", target, sb.Name, s)
		}
	}
	return &Agent{Client: sandpodv1.NewAgentServiceClient(conn), conn: conn}
}

// Context is ctx: the agent admits the caller by its client certificate
// (there is no secret to add since the bridge CA).
func (a *Agent) Context(ctx context.Context) context.Context { return ctx }

// ExecResult is what a command run through the agent did.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int32
}

// Shell runs a shell command through the agent and waits for it to end.
func (a *Agent) Shell(ctx context.Context, command string) (ExecResult, error) {
	var res ExecResult
	stream, err := a.Client.Exec(a.Context(ctx))
	if err != nil {
		return res, err
	}
	start := &sandpodv1.ExecRequest{Msg: &sandpodv1.ExecRequest_Start{Start: &sandpodv1.ExecStart{Shell: command}}}
	if err := stream.Send(start); err != nil {
		return res, err
	}
	if err := stream.CloseSend(); err != nil {
		return res, err
	}
	var stdout, stderr strings.Builder
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, errors.New("exec stream ended without an exit status")
		}
		if err != nil {
			return res, err
		}
		switch m := msg.Msg.(type) {
		case *sandpodv1.ExecResponse_Stdout:
			stdout.Write(m.Stdout)
		case *sandpodv1.ExecResponse_Stderr:
			stderr.Write(m.Stderr)
		case *sandpodv1.ExecResponse_Exit:
			res.Stdout, res.Stderr, res.ExitCode = stdout.String(), stderr.String(), m.Exit.GetExitCode()
			return res, nil
		}
	}
}

// --- services

// ServiceAddr waits until a Service has a ready endpoint and returns
// "ClusterIP:port" for the named (or only) port: the node bed's kube-proxy
// routes ClusterIPs from the host, so a test dials it directly (the bridge's
// Service, for the Go and Python clients).
func (e *Env) ServiceAddr(t testing.TB, ns, name, port string) string {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{}
	var addr string
	e.Eventually(t, "service "+name+" with a ready endpoint", func() (bool, string) {
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			return false, err.Error()
		}
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			return false, "no ClusterIP (headless?)"
		}
		var p int32
		for _, sp := range svc.Spec.Ports {
			if sp.Name == port || (port == "" && len(svc.Spec.Ports) == 1) {
				p = sp.Port
			}
		}
		if p == 0 {
			return false, fmt.Sprintf("no port %q in %+v", port, svc.Spec.Ports)
		}
		addr = net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(p))
		eps, err := e.Clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range eps.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					return true, ""
				}
			}
		}
		return false, "no ready endpoint"
	})
	return addr
}

// --- diagnostics

// Diagnose logs what a failed test needs to be understood: the sandpod
// objects, pods and events of ns, and the logs of its pods (written under
// $SANDPOD_E2E_LOGS/<test> too, when set).
func (e *Env) Diagnose(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b strings.Builder
	section := func(title, out string, err error) {
		fmt.Fprintf(&b, "=== %s\n%s", title, out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	out, err := e.RunKubectl(ctx, "get", "sandboxes,sandboxclaims,sandboxwarmpools,sandboxtemplates,pods,pvc,services,events", "-n", ns, "-o", "wide")
	section("objects in "+ns, out, err)
	out, err = e.RunKubectl(ctx, "get", "sandboxes,sandboxclaims", "-n", ns, "-o", "yaml")
	section("sandboxes and claims", out, err)
	out, err = e.RunKubectl(ctx, "describe", "pods", "-n", ns)
	section("pods", out, err)
	pods := &corev1.PodList{}
	if err := e.Client.List(ctx, pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			out, err = e.RunKubectl(ctx, "logs", "-n", ns, p.Name, "--all-containers", "--prefix", "--tail=200")
			section("logs of "+p.Name, out, err)
		}
	}
	out, err = e.RunKubectl(ctx, "logs", "-n", "sandpod-system", "-l", "app.kubernetes.io/name=sandpod", "--all-containers", "--prefix", "--tail=100")
	section("sandpod-system logs (tail)", out, err)
	t.Log(b.String())
	if dir := os.Getenv(EnvLogs); dir != "" {
		d := filepath.Join(dir, nonDNS.ReplaceAllString(t.Name(), "_"))
		if err := os.MkdirAll(d, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(d, "diagnostics.txt"), []byte(b.String()), 0o644)
		}
	}
}
