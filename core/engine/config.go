package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Definitions are the SandboxTemplates and SandboxWarmPools the engine serves,
// read from the same YAML a cluster takes.
type Definitions struct {
	Templates []v1alpha1.SandboxTemplate
	Pools     []v1alpha1.SandboxWarmPool
	// Quotas are the SandboxQuotas (quota.go).
	Quotas []v1alpha1.SandboxQuota
	// Engine holds the settings of a LocalEngineConfig document, if any.
	Engine *LocalEngineConfig
}

// LocalEngineConfig is an optional document of the engine's own settings
// (at most one):
//
//	apiVersion: sandpod.dev/v1alpha1
//	kind: LocalEngineConfig
//	agentHealthCheck: {period: 5s, timeout: 2s, failureThreshold: 3}
//	agentRestart: {policy: Always, initialBackoff: 10s, maxBackoff: 5m, resetAfter: 10m, maxStartFailures: 5}
type LocalEngineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	AgentHealthCheck  HealthCheck   `json:"agentHealthCheck,omitempty"`
	AgentRestart      RestartPolicy `json:"agentRestart,omitempty"`
	// Snapshots bounds the snapshots of each namespace.
	Snapshots SnapshotLimits `json:"snapshots,omitempty"`
}

// SnapshotLimits are the local engine's snapshot quotas: over them a
// snapshot is refused with RESOURCE_EXHAUSTED.
type SnapshotLimits struct {
	// MaxPerNamespace snapshots (default 100).
	MaxPerNamespace int `json:"maxPerNamespace,omitempty"`
	// MaxBytes of file data in one snapshot (default 10 GiB).
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

func (l SnapshotLimits) withDefaults() SnapshotLimits {
	if l.MaxPerNamespace <= 0 {
		l.MaxPerNamespace = defaultMaxSnapshotsPerNamespace
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxSnapshotBytes
	}
	return l
}

// LoadDefinitions reads YAML files (or every *.yaml/*.yml in a directory).
func LoadDefinitions(paths ...string) (Definitions, error) {
	var defs Definitions
	for _, p := range paths {
		files, err := yamlFiles(p)
		if err != nil {
			return defs, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return defs, err
			}
			if err := defs.add(f, b); err != nil {
				return defs, err
			}
		}
	}
	return defs, defs.check()
}

// ParseDefinitions reads definitions from YAML bytes; source names them in errors.
func ParseDefinitions(source string, data []byte) (Definitions, error) {
	var defs Definitions
	if err := defs.add(source, data); err != nil {
		return defs, err
	}
	return defs, defs.check()
}

func yamlFiles(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, _ := filepath.Glob(filepath.Join(p, pat))
		files = append(files, m...)
	}
	sort.Strings(files)
	return files, nil
}

func (d *Definitions) add(file string, b []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for i := 1; ; i++ {
		var raw map[string]any
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("config %s, document %d: %w", file, i, err)
		}
		if raw == nil {
			continue
		}
		j, _ := yaml.Marshal(raw)
		var tm metav1.TypeMeta
		_ = yaml.Unmarshal(j, &tm)
		if tm.APIVersion != v1alpha1.GroupVersion.String() {
			return fmt.Errorf("config %s, document %d: apiVersion %q, want %s", file, i, tm.APIVersion, v1alpha1.GroupVersion)
		}
		switch tm.Kind {
		case "SandboxTemplate":
			var t v1alpha1.SandboxTemplate
			if err := yaml.UnmarshalStrict(j, &t); err != nil {
				return fmt.Errorf("config %s, SandboxTemplate: %w", file, err)
			}
			d.Templates = append(d.Templates, t)
		case "SandboxWarmPool":
			var p v1alpha1.SandboxWarmPool
			if err := yaml.UnmarshalStrict(j, &p); err != nil {
				return fmt.Errorf("config %s, SandboxWarmPool: %w", file, err)
			}
			d.Pools = append(d.Pools, p)
		case "SandboxQuota":
			var q v1alpha1.SandboxQuota
			if err := yaml.UnmarshalStrict(j, &q); err != nil {
				return fmt.Errorf("config %s, SandboxQuota: %w", file, err)
			}
			if err := checkQuota(&q); err != nil {
				return err
			}
			d.Quotas = append(d.Quotas, q)
		case "LocalEngineConfig":
			var c LocalEngineConfig
			if err := yaml.UnmarshalStrict(j, &c); err != nil {
				return fmt.Errorf("config %s, LocalEngineConfig: %w", file, err)
			}
			if d.Engine != nil {
				return fmt.Errorf("config %s, document %d: LocalEngineConfig given twice", file, i)
			}
			if err := firstErr(c.AgentHealthCheck.check(), c.AgentRestart.check()); err != nil {
				return fmt.Errorf("config %s, LocalEngineConfig: %w", file, err)
			}
			d.Engine = &c
		default:
			return fmt.Errorf("config %s, document %d: kind %q is not served by the local engine (want SandboxTemplate, SandboxWarmPool, SandboxQuota or LocalEngineConfig)", file, i, tm.Kind)
		}
	}
}

func (d *Definitions) check() error {
	seen := map[string]bool{}
	for i := range d.Templates {
		t := &d.Templates[i]
		if t.Namespace == "" {
			t.Namespace = DefaultNamespace
		}
		if err := checkName("SandboxTemplate", t.Name); err != nil {
			return err
		}
		if seen[t.Namespace+"/"+t.Name] {
			return fmt.Errorf("config: SandboxTemplate %s/%s defined twice", t.Namespace, t.Name)
		}
		seen[t.Namespace+"/"+t.Name] = true
		if _, err := resolveTemplate(t); err != nil {
			return err
		}
	}
	for i := range d.Pools {
		p := &d.Pools[i]
		if p.Namespace == "" {
			p.Namespace = DefaultNamespace
		}
		if err := checkName("SandboxWarmPool", p.Name); err != nil {
			return err
		}
		if !seen[p.Namespace+"/"+p.Spec.TemplateRef.Name] {
			return fmt.Errorf("config: SandboxWarmPool %s/%s refers to template %q, which is not defined", p.Namespace, p.Name, p.Spec.TemplateRef.Name)
		}
		if p.Spec.Replicas < 0 || p.Spec.Replicas > MaxPoolReplicas {
			return fmt.Errorf("config: SandboxWarmPool %s/%s: replicas %d out of range 0..%d", p.Namespace, p.Name, p.Spec.Replicas, MaxPoolReplicas)
		}
		if p.Spec.Snapshot != "" {
			if err := checkName("SandboxWarmPool "+p.Name+" snapshot", p.Spec.Snapshot); err != nil {
				return err
			}
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkName(kind, name string) error {
	if name == "" || len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("config: %s name %q must be a DNS label (lowercase letters, digits, '-', at most 63)", kind, name)
	}
	return nil
}

// runSpec is everything the engine needs to run a sandbox of a template,
// resolved once and stored with each sandbox so it outlives config changes.
type runSpec struct {
	Template    string            `json:"template"`
	Command     []string          `json:"command,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	MemoryBytes int64             `json:"memoryBytes,omitempty"`
	CPUMillis   int64             `json:"cpuMillis,omitempty"`
	PidsLimit   int64             `json:"pidsLimit,omitempty"`
	// DiskBytes and DiskInodes bound what the sandbox writes to the host's
	// disk (disklimit.go); 0 in a sandbox made before disk limits.
	DiskBytes   int64               `json:"diskBytes,omitempty"`
	DiskInodes  int64               `json:"diskInodes,omitempty"`
	NetIsolated bool                `json:"netIsolated,omitempty"`
	AutoResume  bool                `json:"autoResume,omitempty"`
	IdleTimeout metav1.Duration     `json:"idleTimeout,omitempty"`
	IdleAction  v1alpha1.IdleAction `json:"idleAction,omitempty"`
	DefaultTTL  metav1.Duration     `json:"defaultTTL,omitempty"`
	// DefaultLease: the template's lease of claims and creates without one.
	DefaultLease   metav1.Duration         `json:"defaultLease,omitempty"`
	ShutdownPolicy v1alpha1.ShutdownPolicy `json:"shutdownPolicy,omitempty"`
	Image          string                  `json:"image,omitempty"`
	RuntimeClass   string                  `json:"runtimeClass,omitempty"`
	// RunAsUser and RunAsGroup come from the template's securityContext:
	// the ids commands run as inside (nil: DefaultSandboxUID).
	RunAsUser  *int64 `json:"runAsUser,omitempty"`
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// HostPaths are the template's hostPath volumes that its container
	// mounts: host trees the sandbox sees read-only.
	HostPaths []hostMount `json:"hostPaths,omitempty"`
	Hash      string      `json:"hash"`

	// RestartOnFailure: the template asks for restarts (sandboxRestartPolicy).
	RestartOnFailure bool `json:"restartOnFailure,omitempty"`
}

// runAs is the uid and gid commands run as inside the sandbox.
func (rs runSpec) runAs() (uid, gid uint32) {
	uid, gid = DefaultSandboxUID, DefaultSandboxUID
	if rs.RunAsUser != nil {
		uid = uint32(*rs.RunAsUser)
		gid = uid
	}
	if rs.RunAsGroup != nil {
		gid = uint32(*rs.RunAsGroup)
	}
	return uid, gid
}

// DefaultPidsLimit caps the processes of one sandbox when the template does
// not say (Kubernetes has no per-container field for it).
const DefaultPidsLimit = 4096

func resolveTemplate(t *v1alpha1.SandboxTemplate) (runSpec, error) {
	cs := t.Spec.PodTemplate.Spec.Containers
	if len(cs) == 0 {
		return runSpec{}, fmt.Errorf("config: SandboxTemplate %s: spec.podTemplate.spec.containers is empty", t.Name)
	}
	i := v1alpha1.AgentContainerIndex(&t.Spec.PodTemplate.Spec, t.Spec.AgentContainer)
	if i < 0 {
		return runSpec{}, fmt.Errorf("config: SandboxTemplate %s: agentContainer %q names no container of spec.podTemplate.spec.containers", t.Name, t.Spec.AgentContainer)
	}
	if len(cs) > 1 {
		// Dropping a sidecar the sandbox's code relies on would fail later
		// and obscurely; refuse the template at load instead.
		var sidecars []string
		for j := range cs {
			if j != i {
				sidecars = append(sidecars, cs[j].Name)
			}
		}
		return runSpec{}, fmt.Errorf("config: SandboxTemplate %s: the local engine runs one container per sandbox; sidecars (%s) need Kubernetes: remove them from this template for sandpod serve", t.Name, strings.Join(sidecars, ", "))
	}
	c := cs[i]
	rs := runSpec{
		Template:       t.Name,
		Command:        append(append([]string{}, c.Command...), c.Args...),
		Env:            map[string]string{},
		PidsLimit:      DefaultPidsLimit,
		AutoResume:     t.Spec.AutoResume,
		ShutdownPolicy: t.Spec.Lifecycle.ShutdownPolicy,
		Image:          c.Image,
	}
	rs.RestartOnFailure = t.Spec.RestartOnFailure
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return rs, fmt.Errorf("config: SandboxTemplate %s: env %s uses valueFrom, which the local engine cannot resolve", t.Name, e.Name)
		}
		rs.Env[e.Name] = e.Value
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		rs.MemoryBytes = q.Value()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		rs.CPUMillis = q.MilliValue()
	}
	var err error
	if rs.DiskBytes, rs.DiskInodes, err = diskLimits(&c); err != nil {
		return rs, fmt.Errorf("config: SandboxTemplate %s: %w", t.Name, err)
	}
	if _, err := lifecycle.CheckEgress(t.Spec.NetworkPolicy); err != nil {
		return rs, fmt.Errorf("config: SandboxTemplate %s: %w", t.Name, err)
	}
	switch lifecycle.EffectiveEgress(t.Spec.NetworkPolicy) {
	case v1alpha1.EgressNone:
		rs.NetIsolated = true
	case v1alpha1.EgressAllowlist:
		// pasta, the sandbox's user-mode network, has no filter: refused
		// rather than run with more egress than the template says.
		return rs, fmt.Errorf("config: SandboxTemplate %s: networkPolicy.egress: Allowlist is enforced only on Kubernetes (by the cluster's NetworkPolicy implementation); the local engine offers Internet or None", t.Name)
	}
	if d := t.Spec.Lifecycle.IdleTimeout; d != nil {
		rs.IdleTimeout = *d
	}
	switch a := t.Spec.Lifecycle.IdleAction; a {
	case "", v1alpha1.IdleSuspend, v1alpha1.IdlePause:
		rs.IdleAction = a
	default:
		return rs, fmt.Errorf("config: SandboxTemplate %s: spec.lifecycle.idleAction %q, want %s or %s", t.Name, a, v1alpha1.IdleSuspend, v1alpha1.IdlePause)
	}
	if d := t.Spec.Lifecycle.DefaultTTL; d != nil {
		rs.DefaultTTL = *d
	}
	if d := t.Spec.Lifecycle.DefaultLease; d != nil {
		if d.Duration < lifecycle.MinLease || d.Duration > lifecycle.MaxLease {
			return rs, fmt.Errorf("config: SandboxTemplate %s: spec.lifecycle.defaultLease %s is outside %s..%s", t.Name, d.Duration, lifecycle.MinLease, lifecycle.MaxLease)
		}
		rs.DefaultLease = *d
	}
	if t.Spec.RuntimeClassName != nil {
		rs.RuntimeClass = *t.Spec.RuntimeClassName
	}
	if err := checkRuntimeClass(t.Name, "spec.runtimeClassName", rs.RuntimeClass, localRuntimeClasses); err != nil {
		return rs, err
	}
	if p := t.Spec.PodTemplate.Spec.RuntimeClassName; p != nil {
		if err := checkRuntimeClass(t.Name, "spec.podTemplate.spec.runtimeClassName", *p, localRuntimeClasses); err != nil {
			return rs, err
		}
	}
	if err := resolveSecurity(t, &c, &rs); err != nil {
		return rs, err
	}
	rs.Hash = rs.specHash()
	return rs, nil
}
