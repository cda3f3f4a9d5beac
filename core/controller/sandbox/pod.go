package sandbox

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/agentconn"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Paths and names of what the controller injects into every sandbox pod. The
// agent image must hold the sandpod binary at AgentImageBinary, and
// `sandpod install-agent DEST` copies that binary to DEST.
const (
	AgentImageBinary = "/usr/local/bin/sandpod"
	agentVolume      = "sandpod-bin"
	agentDir         = "/sandpod/bin"
	AgentBinary      = agentDir + "/sandpod"
	identityVolume   = "sandpod-identity"
	workspaceVolume  = "sandpod-workspace"
	WorkspaceDir     = "/workspace"
	installContainer = "sandpod-install"
	// BridgeCAPinFlag is the agent's flag carrying the pin; a pod whose
	// agent has it serves the bridge-CA TLS (status.agentAuth).
	BridgeCAPinFlag = "--bridge-ca-sha256"
)

// Default resources of a sandbox container that declares none.
var (
	defaultCPULimit      = resource.MustParse("1")
	defaultMemoryLimit   = resource.MustParse("1Gi")
	defaultCPURequest    = resource.MustParse("100m")
	defaultMemoryRequest = resource.MustParse("128Mi")
)

// PodConfig is the controller-wide part of a sandbox pod.
type PodConfig struct {
	// AgentImage holds the sandpod binary copied into the pod.
	AgentImage string
	// AgentDelivery is how the binary gets there (default: init container).
	AgentDelivery AgentDelivery
	// RuntimeClass is the controller-wide RuntimeClass policy.
	RuntimeClass RuntimeClassPolicy
	// BridgeCAPin is the SHA-256 of the bridge CA's public key
	// (agentconn.Pin), given to every agent: the agent admits callers with
	// a client certificate of that CA. It is public: nothing in a sandbox
	// pod is a credential.
	BridgeCAPin string
	// BridgeCAKey is the bridge CA's public key (agentconn.PublicKey; its
	// SHA-256 is BridgeCAPin): the agent seals its identity token to it.
	// Public too.
	BridgeCAKey string
}

// PVCName is the name of the PVC made from a volume claim template, as a
// StatefulSet names them: <template>-<sandbox>.
func PVCName(template, sandbox string) string { return template + "-" + sandbox }

// OwnerRef makes sb the controlling owner of a child.
func OwnerRef(sb *v1alpha1.Sandbox) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sandbox",
		Name: sb.Name, UID: sb.UID, Controller: &t, BlockOwnerDeletion: &t,
	}
}

// ChildLabels are the labels of every child of a sandbox.
func ChildLabels(sb *v1alpha1.Sandbox) map[string]string {
	l := map[string]string{v1alpha1.LabelSandbox: sb.Name}
	if sb.Spec.TemplateRef != nil {
		l[v1alpha1.LabelTemplate] = sb.Spec.TemplateRef.Name
	}
	return l
}

// BuildPod is the pod of a sandbox: the sandbox's pod template with the agent
// injected, secure defaults filled in where the template is silent, its PVCs
// mounted, and the RuntimeClass policy applied. It fails only when the policy
// rejects the sandbox.
func BuildPod(sb *v1alpha1.Sandbox, cfg PodConfig) (*corev1.Pod, error) {
	spec := sb.Spec.PodTemplate.Spec.DeepCopy()
	if len(spec.Containers) == 0 {
		return nil, fmt.Errorf("podTemplate has no containers")
	}
	if v1alpha1.AgentContainerIndex(spec, sb.Spec.AgentContainer) < 0 {
		return nil, fmt.Errorf("agentContainer %q names no container of the podTemplate", sb.Spec.AgentContainer)
	}
	if _, err := agentconn.ParsePublicKey(cfg.BridgeCAKey, cfg.BridgeCAPin); !agentconn.ValidPin(cfg.BridgeCAPin) || err != nil {
		return nil, fmt.Errorf("the controller has no bridge CA pin and key") // a bug: Setup makes them
	}
	if err := cfg.RuntimeClass.Apply(spec); err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range sb.Spec.PodTemplate.Labels {
		labels[k] = v
	}
	for k, v := range ChildLabels(sb) {
		labels[k] = v
	}
	labels[v1alpha1.LabelAgentAuth] = string(v1alpha1.AgentAuthClientCertificate)
	labels[v1alpha1.LabelAgentCA] = agentCALabel(cfg.BridgeCAPin)
	var annotations map[string]string
	if len(sb.Spec.PodTemplate.Annotations) > 0 {
		annotations = map[string]string{}
		for k, v := range sb.Spec.PodTemplate.Annotations {
			annotations[k] = v
		}
	}

	spec.Hostname = sb.Name
	if sb.Spec.Service {
		spec.Subdomain = sb.Name
	}
	applySecureDefaults(spec)
	addVolumes(spec, sb, cfg)
	injectAgent(spec, sb, cfg)

	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: sb.Name, Namespace: sb.Namespace,
			Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{OwnerRef(sb)},
		},
		Spec: *spec,
	}, nil
}

// applySecureDefaults fills what the template leaves unset: no
// service-account token, seccomp RuntimeDefault, no privilege escalation, all
// capabilities dropped, non-root when the template names a non-root user, and
// resource limits.
func applySecureDefaults(spec *corev1.PodSpec) {
	if spec.AutomountServiceAccountToken == nil {
		f := false
		spec.AutomountServiceAccountToken = &f
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := spec.SecurityContext
	if psc.SeccompProfile == nil {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	if psc.RunAsNonRoot == nil && psc.RunAsUser != nil && *psc.RunAsUser != 0 {
		t := true
		psc.RunAsNonRoot = &t
	}
	for i := range spec.Containers {
		secureContainer(&spec.Containers[i])
	}
	for i := range spec.InitContainers {
		secureContainer(&spec.InitContainers[i])
	}
}

func secureContainer(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	if sc.AllowPrivilegeEscalation == nil && (sc.Privileged == nil || !*sc.Privileged) {
		f := false
		sc.AllowPrivilegeEscalation = &f
	}
	privileged := sc.Privileged != nil && *sc.Privileged
	switch {
	case privileged:
	case sc.Capabilities == nil:
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	case !hasCapability(sc.Capabilities.Add, "NET_RAW") && !dropsForEveryRuntime(sc.Capabilities.Drop, "NET_RAW"):
		// A template that lists capabilities keeps the runtime's default
		// set, which has NET_RAW: raw sockets let sandbox code forge
		// packets on the pod network (ARP, spoofed sources) to get between
		// other pods. It goes unless the template adds it by name.
		sc.Capabilities.Drop = append(sc.Capabilities.Drop, "NET_RAW")
	}
	defaultResources(&c.Resources)
}

// dropsForEveryRuntime says whether drop removes c (or ALL) under every
// container runtime: only the bare name counts, in any case. containerd
// prefixes each entry with CAP_, so its drop of "CAP_NET_RAW" is of
// CAP_CAP_NET_RAW, which removes nothing (CRI-O would take it).
func dropsForEveryRuntime(drop []corev1.Capability, c string) bool {
	for _, x := range drop {
		if strings.EqualFold(string(x), c) || strings.EqualFold(string(x), "ALL") {
			return true
		}
	}
	return false
}

// hasCapability says whether caps names c (with or without CAP_, any case,
// as container runtimes accept both).
func hasCapability(caps []corev1.Capability, c string) bool {
	for _, x := range caps {
		if strings.EqualFold(strings.TrimPrefix(strings.ToUpper(string(x)), "CAP_"), c) {
			return true
		}
	}
	return false
}

// defaultResources sets a limit for cpu and memory when none is given (never
// below the request) and a request when none is given (never above the limit).
func defaultResources(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for _, d := range []struct {
		name       corev1.ResourceName
		limit, req resource.Quantity
	}{
		{corev1.ResourceCPU, defaultCPULimit, defaultCPURequest},
		{corev1.ResourceMemory, defaultMemoryLimit, defaultMemoryRequest},
	} {
		req, hasReq := r.Requests[d.name]
		lim, hasLim := r.Limits[d.name]
		if !hasLim {
			lim = d.limit.DeepCopy()
			if hasReq && req.Cmp(lim) > 0 {
				lim = req.DeepCopy()
			}
			r.Limits[d.name] = lim
		}
		if !hasReq {
			req = d.req.DeepCopy()
			if req.Cmp(lim) > 0 {
				req = lim.DeepCopy()
			}
			r.Requests[d.name] = req
		}
	}
}

func hasVolume(spec *corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// identityTokenVolume is the agent's identity: a service-account token of
// the pod's service account for audience AgentTokenAudience, which the
// kubelet asks the API server for (TokenRequest: nothing stored), bound to
// this pod (its name and UID are in the token; it dies with the pod) and
// renews in the file before it expires. The API server takes no token of
// this audience; the sandbox's code can read it, and it proves only "this
// pod" (docs/security.md).
func identityTokenVolume() corev1.Volume {
	secs := int64(v1alpha1.AgentIdentityTokenSeconds)
	return corev1.Volume{Name: identityVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: v1alpha1.AgentTokenAudience, ExpirationSeconds: &secs, Path: path.Base(v1alpha1.AgentIdentityTokenPath),
		}}},
	}}}
}

// addVolumes adds the PVC of each volume claim template (replacing a volume
// of the same name), the agent's binary volume, and a workspace
// when nothing is mounted at /workspace.
func addVolumes(spec *corev1.PodSpec, sb *v1alpha1.Sandbox, cfg PodConfig) {
	for _, vct := range sb.Spec.VolumeClaimTemplates {
		src := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(vct.Name, sb.Name)}}
		replaced := false
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == vct.Name {
				spec.Volumes[i].VolumeSource = src
				replaced = true
			}
		}
		if !replaced {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: src})
		}
	}
	agentSource := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if cfg.AgentDelivery == AgentImageVolume {
		agentSource = corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: cfg.AgentImage, PullPolicy: corev1.PullIfNotPresent}}
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: agentVolume, VolumeSource: agentSource}, identityTokenVolume())
	main := &spec.Containers[v1alpha1.AgentContainerIndex(spec, sb.Spec.AgentContainer)]
	mountedWorkspace := false
	for _, m := range main.VolumeMounts {
		if strings.TrimSuffix(m.MountPath, "/") == WorkspaceDir {
			mountedWorkspace = true
		}
	}
	if !mountedWorkspace && !hasVolume(spec, workspaceVolume) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: workspaceVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: workspaceVolume, MountPath: WorkspaceDir})
	}
}

// injectAgent mounts the agent binary (an image volume, or an emptyDir an
// init container copies it into: cfg.AgentDelivery) and makes the agent
// the main process of the sandbox container (agentContainer, else the
// first), supervising the
// template's command when there is one, with a liveness probe on the agent
// (agentLivenessProbe) unless the template has one. It adds no readiness
// probe: a probe
// runs at most once a second, so it would hold a cold sandbox back by up to
// a second after its container started, while the agent listens within
// milliseconds of it (the bridge waits briefly for a just-started agent).
func injectAgent(spec *corev1.PodSpec, sb *v1alpha1.Sandbox, cfg PodConfig) {
	binMount := corev1.VolumeMount{Name: agentVolume, MountPath: agentDir, ReadOnly: true}
	if cfg.AgentDelivery == AgentImageVolume {
		binMount.SubPath = agentImageDir()
	} else {
		install := corev1.Container{
			Name:            installContainer,
			Image:           cfg.AgentImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{AgentImageBinary, "install-agent", AgentBinary},
			VolumeMounts:    []corev1.VolumeMount{{Name: agentVolume, MountPath: agentDir}},
		}
		secureContainer(&install)
		install.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("100m")
		install.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("64Mi")
		install.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("10m")
		install.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("16Mi")
		spec.InitContainers = append([]corev1.Container{install}, spec.InitContainers...)
	}

	main := &spec.Containers[v1alpha1.AgentContainerIndex(spec, sb.Spec.AgentContainer)]
	cmd := []string{AgentBinary, "agent",
		"--listen", fmt.Sprintf("tcp://0.0.0.0:%d", v1alpha1.AgentPort),
		"--root", WorkspaceDir,
		"--sandbox", sb.Name,
		// Both public: the agent makes its own serving certificate and
		// checks the bridge's client certificate against the pin.
		BridgeCAPinFlag, cfg.BridgeCAPin,
		"--sandbox-uid", string(sb.UID),
		// The agent's proof of its pod to the bridge: the kubelet's token
		// (identityVolume), sealed to the CA key in its certificate.
		"--bridge-ca-key", cfg.BridgeCAKey,
		"--identity-token-file", v1alpha1.AgentIdentityTokenPath,
		"--health-listen", fmt.Sprintf("tcp://0.0.0.0:%d", v1alpha1.AgentHealthPort),
	}
	if user := append(append([]string{}, main.Command...), main.Args...); len(user) > 0 {
		cmd = append(append(cmd, "--"), user...)
	}
	main.Command, main.Args = cmd, nil
	if main.LivenessProbe == nil {
		main.LivenessProbe = agentLivenessProbe()
	}
	main.VolumeMounts = append(main.VolumeMounts, binMount,
		corev1.VolumeMount{Name: identityVolume, MountPath: path.Dir(v1alpha1.AgentIdentityTokenPath), ReadOnly: true})
	hasPort := false
	for _, p := range main.Ports {
		if p.ContainerPort == v1alpha1.AgentPort {
			hasPort = true
		}
	}
	if !hasPort {
		main.Ports = append(main.Ports, corev1.ContainerPort{Name: v1alpha1.AgentPortName, ContainerPort: v1alpha1.AgentPort, Protocol: corev1.ProtocolTCP})
	}
}

// agentCALabel is the LabelAgentCA value of a pin.
func agentCALabel(pin string) string { return pin[:min(len(pin), 32)] }

// AgentCAStale says whether pod's agent trusts another bridge CA than pin:
// the bridge (holding pin's CA) and that agent would refuse each other, so
// the pod must be replaced. Pods without the label (an earlier controller's,
// with their own Secret) are not.
func AgentCAStale(pod *corev1.Pod, pin string) bool {
	got, ok := pod.Labels[v1alpha1.LabelAgentCA]
	return ok && pin != "" && got != agentCALabel(pin)
}
