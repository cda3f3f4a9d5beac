package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/controller/sandbox"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// pythonCheck imports what a Python sandbox must have and prints a digest
// the test can compare.
const pythonCheck = `import json, ssl, sqlite3, hashlib; print(hashlib.sha256(b"sandpod").hexdigest(), sqlite3.sqlite_version_info >= (3,), json.dumps([ssl.OPENSSL_VERSION != ""]))`

func wantPythonCheck() string {
	sum := sha256.Sum256([]byte("sandpod"))
	return hex.EncodeToString(sum[:]) + " True [true]"
}

// mainContainer is the sandbox container of a pod (the first).
func mainContainer(t *testing.T, pod *corev1.Pod) corev1.ContainerStatus {
	t.Helper()
	name := pod.Spec.Containers[0].Name
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	t.Fatalf("pod %s has no status for container %s: %+v", pod.Name, name, pod.Status)
	return corev1.ContainerStatus{}
}

// checkRunningPod: the sandbox's pod really runs on the node, its agent
// being the main process, started once.
func checkRunningPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	cs := mainContainer(t, pod)
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" || !cs.Ready || cs.State.Running == nil {
		t.Fatalf("pod %s not running and ready on a node: phase=%s node=%q container=%+v", pod.Name, pod.Status.Phase, pod.Spec.NodeName, cs)
	}
	if !strings.HasPrefix(cs.ContainerID, "containerd://") {
		t.Errorf("container id %q: not run by containerd", cs.ContainerID)
	}
	if cs.RestartCount != 0 {
		t.Errorf("sandbox container restarted %d times", cs.RestartCount)
	}
	if c := pod.Spec.Containers[0]; len(c.Command) < 2 || c.Command[0] != sandbox.AgentBinary || c.Command[1] != "agent" {
		t.Errorf("main command = %v, want the agent", c.Command)
	}
}

// checkAgentAndPython: the agent answers on the pod IP with the sandbox's
// secret, runs commands in its root, and the image's Python works, through
// the agent and through the pods/exec subresource.
func checkAgentAndPython(t *testing.T, env *Env, sb *v1alpha1.Sandbox, pod *corev1.Pod) {
	t.Helper()
	ctx := Context(t)
	a := env.Agent(t, sb)
	info, err := a.Client.GetAgentInfo(a.Context(ctx), &sandpodv1.GetAgentInfoRequest{})
	if err != nil {
		t.Fatalf("agent info: %v", err)
	}
	if info.GetSandbox() != sb.Name || info.GetRoot() != sandbox.WorkspaceDir {
		t.Errorf("agent info = %+v, want sandbox %s, root %s", info, sb.Name, sandbox.WorkspaceDir)
	}
	res, err := a.Shell(ctx, `pwd; python3 -c 'print(6 * 7)'`)
	if err != nil || res.ExitCode != 0 || res.Stdout != sandbox.WorkspaceDir+"\n42\n" {
		t.Errorf("agent exec = %+v, %v; want %q", res, err, sandbox.WorkspaceDir+"\n42\n")
	}
	res, err = a.Shell(ctx, "python3 -c '"+pythonCheck+"'")
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != wantPythonCheck() {
		t.Errorf("python through the agent = %+v, %v; want %q", res, err, wantPythonCheck())
	}
	out, err := env.PodExec(ctx, pod.Namespace, pod.Name, "", "python3", "-c", pythonCheck)
	if err != nil || strings.TrimSpace(out) != wantPythonCheck() {
		t.Errorf("python through kubectl exec = %q, %v; want %q", out, err, wantPythonCheck())
	}
}

// hostKernel is this machine's /proc/version: a runc container shares it,
// gVisor shows its own. (The node bed is a single node: this machine.)
func hostKernel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSandboxFromTemplateRunsUnderRunc(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage))
	_, sb := env.Claim(t, ns, "job", "python")

	pod := env.Pod(t, sb)
	checkRunningPod(t, pod)
	if pod.Spec.RuntimeClassName != nil {
		t.Errorf("runtimeClassName = %q, want none (runc)", *pod.Spec.RuntimeClassName)
	}
	if got := mainContainer(t, pod).Image; !strings.HasSuffix(got, PythonImage) {
		t.Errorf("image = %q, want %s", got, PythonImage)
	}
	ctx := Context(t)
	kernel, err := env.PodExec(ctx, ns, pod.Name, "", "cat", "/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(kernel) != hostKernel(t) {
		t.Errorf("in the pod /proc/version = %q, want the host's %q (runc shares the kernel)", kernel, hostKernel(t))
	}
	checkAgentAndPython(t, env, sb, pod)
}

func TestSandboxWithRuntimeClassRunsUnderGVisor(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	tmpl := Template(ns, "python-gvisor", PythonImage)
	rc := GVisor
	tmpl.Spec.RuntimeClassName = &rc
	env.Apply(t, tmpl)
	_, sb := env.Claim(t, ns, "job", "python-gvisor")

	pod := env.Pod(t, sb)
	checkRunningPod(t, pod)
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != GVisor {
		t.Fatalf("runtimeClassName = %v, want %s", pod.Spec.RuntimeClassName, GVisor)
	}
	// From inside: gVisor's kernel log is its own, and so is its kernel.
	ctx := Context(t)
	dmesg, err := env.PodExec(ctx, ns, pod.Name, "", "dmesg")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dmesg, "Starting gVisor") {
		t.Errorf("dmesg in the pod = %q, want gVisor's (\"Starting gVisor...\")", dmesg)
	}
	kernel, err := env.PodExec(ctx, ns, pod.Name, "", "cat", "/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(kernel) == hostKernel(t) {
		t.Errorf("in the pod /proc/version is the host's (%q): not a gVisor sandbox", kernel)
	}
	checkAgentAndPython(t, env, sb, pod)
}

func TestSandboxPodHasNoServiceAccountToken(t *testing.T) {
	t.Parallel()
	env := Setup(t)
	ns := env.Namespace(t)
	env.Apply(t, Template(ns, "python", PythonImage))
	_, sb := env.Claim(t, ns, "job", "python")
	pod := env.Pod(t, sb)

	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", pod.Spec.AutomountServiceAccountToken)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(m.MountPath, "/var/run/secrets/kubernetes.io") {
				t.Errorf("container %s mounts %s at %s", c.Name, m.Name, m.MountPath)
			}
		}
	}
	// And from inside, where it matters: no token, under either path.
	a := env.Agent(t, sb)
	res, err := a.Shell(context.Background(), "for p in /var/run/secrets/kubernetes.io /run/secrets/kubernetes.io; do "+
		"if test -e $p; then echo found $p; find $p; fi; done; echo checked")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	if res.Stdout != "checked\n" {
		t.Errorf("a service-account token is visible in the sandbox:\n%s", res.Stdout)
	}
}
