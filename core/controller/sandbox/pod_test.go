package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// sandboxWrapper builds test sandboxes: makeSandbox("x").command(...).obj().
type sandboxWrapper struct{ v1alpha1.Sandbox }

func makeSandbox(name string) *sandboxWrapper {
	return &sandboxWrapper{v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1alpha1.SandboxSpec{PodTemplate: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "python"}},
		}}},
	}}
}

func (w *sandboxWrapper) command(c ...string) *sandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Command = c
	return w
}
func (w *sandboxWrapper) args(a ...string) *sandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Args = a
	return w
}
func (w *sandboxWrapper) runtimeClass(rc string) *sandboxWrapper {
	w.Spec.PodTemplate.Spec.RuntimeClassName = &rc
	return w
}
func (w *sandboxWrapper) storage(name string) *sandboxWrapper {
	w.Spec.VolumeClaimTemplates = append(w.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return w
}
func (w *sandboxWrapper) resources(r corev1.ResourceRequirements) *sandboxWrapper {
	w.Spec.PodTemplate.Spec.Containers[0].Resources = r
	return w
}
func (w *sandboxWrapper) obj() *v1alpha1.Sandbox { return &w.Sandbox }

func TestBuildPodAgentCommand(t *testing.T) {
	base := []string{AgentBinary, "agent", "--listen", "tcp://0.0.0.0:7070", "--root", "/workspace", "--sandbox", "sb",
		"--bridge-ca-sha256", testPin, "--sandbox-uid", "uid-sb",
		"--bridge-ca-key", testKey, "--identity-token-file", "/sandpod/identity/token", "--health-listen", "tcp://0.0.0.0:7071"}
	cases := map[string]struct {
		sb   *v1alpha1.Sandbox
		want []string
	}{
		"no command: agent alone":     {sb: makeSandbox("sb").obj(), want: base},
		"command and args supervised": {sb: makeSandbox("sb").command("python", "-m").args("http.server").obj(), want: append(append([]string{}, base...), "--", "python", "-m", "http.server")},
		"args only are the command":   {sb: makeSandbox("sb").args("sleep", "1").obj(), want: append(append([]string{}, base...), "--", "sleep", "1")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := BuildPod(tc.sb, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, AgentImage: "img"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pod.Spec.Containers[0].Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if pod.Spec.Containers[0].Args != nil {
				t.Errorf("args = %v, want none", pod.Spec.Containers[0].Args)
			}
			if ic := pod.Spec.InitContainers[0]; ic.Image != "img" || ic.Command[0] != AgentImageBinary {
				t.Errorf("install container = %+v", ic)
			}
		})
	}
}

func TestBuildPodIdentityStorageAndDefaults(t *testing.T) {
	sb := makeSandbox("sb").storage("data").obj()
	sb.Spec.Service = true
	pod, err := BuildPod(sb, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, AgentImage: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "sb" || pod.Spec.Hostname != "sb" || pod.Spec.Subdomain != "sb" || pod.Labels[v1alpha1.LabelSandbox] != "sb" {
		t.Errorf("identity: name=%s hostname=%s subdomain=%s labels=%v", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain, pod.Labels)
	}
	if !metav1.IsControlledBy(pod, sb) {
		t.Errorf("pod not controlled by sandbox")
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["data"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data-sb" {
		t.Errorf("pvc volume = %+v", v)
	}
	// Nothing in the pod is a credential of anything but the pod itself:
	// no Secret volume, no secret in the agent's arguments, only the bridge
	// CA's public pin and key and the sandbox's UID; and the kubelet's
	// token of this pod for the agents' audience, an hour, read-only.
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("volume %s mounts a Secret: %+v", v.Name, v)
		}
		if p := v.Projected; p != nil {
			if v.Name != identityVolume || len(p.Sources) != 1 || p.Sources[0].ServiceAccountToken == nil {
				t.Errorf("volume %s projects more than the identity token: %+v", v.Name, v)
				continue
			}
			tok := p.Sources[0].ServiceAccountToken
			if tok.Audience != v1alpha1.AgentTokenAudience || tok.ExpirationSeconds == nil || *tok.ExpirationSeconds != 3600 || tok.Path != "token" {
				t.Errorf("identity token projection %+v", tok)
			}
		}
	}
	mounted := false
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == identityVolume {
			mounted = m.MountPath == "/sandpod/identity" && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("the identity token is not mounted read-only at /sandpod/identity: %+v", pod.Spec.Containers[0].VolumeMounts)
	}
	args := strings.Join(pod.Spec.Containers[0].Command, " ")
	if want := BridgeCAPinFlag + " " + testPin + " --sandbox-uid " + string(sb.UID); !strings.Contains(args, want) {
		t.Errorf("agent command %q lacks %q", args, want)
	}
	if strings.Contains(args, "secret") {
		t.Errorf("agent command %q still names a secret", args)
	}
	if pod.Labels[v1alpha1.LabelAgentAuth] != string(v1alpha1.AgentAuthClientCertificate) {
		t.Errorf("pod labels %v lack the agent-auth mark", pod.Labels)
	}
	if _, err := BuildPod(sb, PodConfig{AgentImage: "img"}); err == nil {
		t.Error("a pod was built without the bridge CA pin")
	}
	if *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("service account token mounted")
	}
	if pod.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccomp not RuntimeDefault")
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s not locked down: %+v", c.Name, c.SecurityContext)
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s has no limits", c.Name)
		}
	}
}

// A template that lists capabilities keeps them, but not NET_RAW unless it
// adds it by name; privileged and drop-ALL templates are left as they are.
func TestSecureContainerCapabilities(t *testing.T) {
	yes := true
	for name, tc := range map[string]struct {
		sc       *corev1.SecurityContext
		wantDrop []corev1.Capability
	}{
		"none given: drop ALL":       {sc: nil, wantDrop: []corev1.Capability{"ALL"}},
		"adds one: NET_RAW dropped":  {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}}, wantDrop: []corev1.Capability{"NET_RAW"}},
		"drops some: NET_RAW too":    {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"MKNOD"}}}, wantDrop: []corev1.Capability{"MKNOD", "NET_RAW"}},
		"adds NET_RAW by name: kept": {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_NET_RAW"}}}, wantDrop: nil},
		"drops all: unchanged":       {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"all"}}}, wantDrop: []corev1.Capability{"all"}},
		// containerd reads this as CAP_CAP_NET_RAW and keeps NET_RAW.
		"drops CAP_NET_RAW: the bare name too": {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CAP_NET_RAW"}}}, wantDrop: []corev1.Capability{"CAP_NET_RAW", "NET_RAW"}},
		"drops net_raw: unchanged":             {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"net_raw"}}}, wantDrop: []corev1.Capability{"net_raw"}},
		"drops CAP_ALL: NET_RAW too":           {sc: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CAP_ALL"}}}, wantDrop: []corev1.Capability{"CAP_ALL", "NET_RAW"}},
		"privileged: the template's call":      {sc: &corev1.SecurityContext{Privileged: &yes}, wantDrop: nil},
	} {
		t.Run(name, func(t *testing.T) {
			c := corev1.Container{Name: "c", SecurityContext: tc.sc}
			secureContainer(&c)
			var got []corev1.Capability
			if c.SecurityContext.Capabilities != nil {
				got = c.SecurityContext.Capabilities.Drop
			}
			if !reflect.DeepEqual(got, tc.wantDrop) {
				t.Errorf("drop = %v, want %v", got, tc.wantDrop)
			}
		})
	}
}

func TestDefaultResources(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		in, want corev1.ResourceRequirements
	}{
		"empty gets defaults": {
			want: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("128Mi")},
			},
		},
		"big request raises the default limit": {
			in: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("4")}},
			want: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("1Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("128Mi")},
			},
		},
		"small limit lowers the default request": {
			in: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("64Mi")}},
			want: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("64Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := *tc.in.DeepCopy()
			defaultResources(&got)
			for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if g, w := got.Limits[rn], tc.want.Limits[rn]; g.Cmp(w) != 0 {
					t.Errorf("limit %s = %s, want %s", rn, g.String(), w.String())
				}
				if g, w := got.Requests[rn], tc.want.Requests[rn]; g.Cmp(w) != 0 {
					t.Errorf("request %s = %s, want %s", rn, g.String(), w.String())
				}
			}
		})
	}
}

func TestRuntimeClassPolicy(t *testing.T) {
	cases := map[string]struct {
		policy  RuntimeClassPolicy
		sb      *v1alpha1.Sandbox
		wantRC  string
		wantErr error
	}{
		"none leaves it unset":        {policy: RuntimeClassPolicy{Mode: RuntimeClassNone}, sb: makeSandbox("a").obj()},
		"require refuses":             {policy: RuntimeClassPolicy{Mode: RuntimeClassRequire}, sb: makeSandbox("a").obj(), wantErr: ErrRuntimeClassRequired},
		"require accepts one named":   {policy: RuntimeClassPolicy{Mode: RuntimeClassRequire}, sb: makeSandbox("a").runtimeClass("kata").obj(), wantRC: "kata"},
		"default fills it in":         {policy: RuntimeClassPolicy{Mode: RuntimeClassDefault, Default: "gvisor"}, sb: makeSandbox("a").obj(), wantRC: "gvisor"},
		"default keeps the pod's own": {policy: RuntimeClassPolicy{Mode: RuntimeClassDefault, Default: "gvisor"}, sb: makeSandbox("a").runtimeClass("kata").obj(), wantRC: "kata"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod, err := BuildPod(tc.sb, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey, RuntimeClass: tc.policy})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			got := ""
			if pod.Spec.RuntimeClassName != nil {
				got = *pod.Spec.RuntimeClassName
			}
			if got != tc.wantRC {
				t.Errorf("runtimeClassName = %q, want %q", got, tc.wantRC)
			}
		})
	}
	if err := (RuntimeClassPolicy{Mode: RuntimeClassDefault}).Validate(); err == nil {
		t.Errorf("default without a class validated")
	}
	if err := (RuntimeClassPolicy{Mode: "bogus"}).Validate(); err == nil {
		t.Errorf("unknown mode validated")
	}
}

// A template with a sidecar: the agent goes into the container the sandbox
// names, the sidecar keeps its own command and gets neither the agent nor
// its secret, and a name that matches no container is refused.
func TestBuildPodAgentContainer(t *testing.T) {
	sb := makeSandbox("sb").command("python", "app.py").obj()
	sb.Spec.PodTemplate.Spec.Containers = append([]corev1.Container{{Name: "redis", Image: "redis", Command: []string{"redis-server"}}},
		sb.Spec.PodTemplate.Spec.Containers...)
	sb.Spec.AgentContainer = "main"
	pod, err := BuildPod(sb, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	redis, main := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if main.Command[0] != AgentBinary || main.Command[len(main.Command)-1] != "app.py" {
		t.Errorf("main command = %v, want the agent supervising app.py", main.Command)
	}
	if diff := cmp.Diff([]string{"redis-server"}, redis.Command); diff != "" {
		t.Errorf("sidecar command changed (-want +got):\n%s", diff)
	}
	for _, m := range redis.VolumeMounts {
		if m.Name == agentVolume {
			t.Errorf("sidecar mounts %s", m.Name)
		}
	}
	if len(redis.Ports) != 0 || redis.LivenessProbe != nil {
		t.Errorf("sidecar got the agent's port or probe: %+v %+v", redis.Ports, redis.LivenessProbe)
	}
	mounts := map[string]bool{}
	for _, m := range main.VolumeMounts {
		mounts[m.MountPath] = true
	}
	if !mounts[WorkspaceDir] || !mounts[agentDir] {
		t.Errorf("main mounts = %v, want the workspace and the agent's binary", main.VolumeMounts)
	}
	if redis.SecurityContext == nil || redis.SecurityContext.AllowPrivilegeEscalation == nil || *redis.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("sidecar lacks the secure defaults: %+v", redis.SecurityContext)
	}

	sb.Spec.AgentContainer = "missing"
	if _, err := BuildPod(sb, PodConfig{BridgeCAPin: testPin, BridgeCAKey: testKey}); err == nil {
		t.Errorf("BuildPod with agentContainer naming no container: no error")
	}
}

// testPin and testKey are a bridge CA's pin and public key.
var (
	testCA, _ = agentconn.NewCA(time.Now())
	testPin   = agentconn.Pin(testCA.Cert)
	testKey   = agentconn.PublicKey(testCA.Cert)
)

// A pod is stale when its agent trusts another bridge CA than the
// controller's (sandpod reinstalled after its namespace went): the bridge
// and it would refuse each other. Pods of earlier controllers (no label)
// are not.
func TestAgentCAStale(t *testing.T) {
	pod, err := BuildPod(makeSandbox("sb").obj(), PodConfig{AgentImage: "img", BridgeCAPin: testPin, BridgeCAKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("ab", 32)
	for name, tc := range map[string]struct {
		labels map[string]string
		pin    string
		want   bool
	}{
		"made with this CA":           {labels: pod.Labels, pin: testPin, want: false},
		"made with another CA":        {labels: pod.Labels, pin: other, want: true},
		"an earlier controller's pod": {labels: map[string]string{v1alpha1.LabelSandbox: "sb"}, pin: testPin, want: false},
		"no pin known":                {labels: pod.Labels, pin: "", want: false},
	} {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{}
			p.Labels = tc.labels
			if got := AgentCAStale(p, tc.pin); got != tc.want {
				t.Errorf("AgentCAStale = %v, want %v (label %q)", got, tc.want, tc.labels[v1alpha1.LabelAgentCA])
			}
		})
	}
	if len(pod.Labels[v1alpha1.LabelAgentCA]) != 32 {
		t.Errorf("label %q: want the pin's first 32 hex digits", pod.Labels[v1alpha1.LabelAgentCA])
	}
}
