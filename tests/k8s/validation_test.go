package k8s_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// crdCase is one object or change the API server must refuse as Invalid,
// with a part of the message that names the field (or the rule) at fault.
type crdCase struct {
	op       func(t *testing.T, ns string) error
	mentions string
}

// TestCRDValidation sends bad Sandbox, SandboxClaim, SandboxWarmPool and
// SandboxTemplate objects and changes to a real kube-apiserver with
// sandpod's CRDs: each must be refused as Invalid, naming the field.
// No manager runs: these are the CRDs' own schema and CEL rules.
func TestCRDValidation(t *testing.T) {
	harness.Skip(t, env)
	ns := env.Namespace(t)
	cases := crdCases()
	t.Logf("%d CRD cases", len(cases))
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[name]
		t.Run(name, func(t *testing.T) {
			err := tc.op(t, ns)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("message %q does not mention %q", err, tc.mentions)
			}
		})
	}
}

func crdCases() map[string]crdCase {
	long := func(n int) string { return strings.Repeat("a", n) }
	sandbox := func(name string, edit func(*v1alpha1.Sandbox)) func(*testing.T, string) error {
		return func(_ *testing.T, ns string) error {
			sb := makeSandbox(ns, name)
			if edit != nil {
				edit(sb)
			}
			return env.Client.Create(ctx, sb)
		}
	}
	claim := func(name string, edit func(*v1alpha1.SandboxClaim)) func(*testing.T, string) error {
		return func(_ *testing.T, ns string) error {
			c := makeClaim(ns, name, "py")
			if edit != nil {
				edit(c)
			}
			return env.Client.Create(ctx, c)
		}
	}
	pool := func(name string, edit func(*v1alpha1.SandboxWarmPool)) func(*testing.T, string) error {
		return func(_ *testing.T, ns string) error {
			p := makePool(ns, name, "py", 1)
			if edit != nil {
				edit(p)
			}
			return env.Client.Create(ctx, p)
		}
	}
	template := createTemplate
	// updateSandbox creates a valid sandbox (first edit), then changes it.
	updateSandbox := func(name string, first, change func(*v1alpha1.Sandbox)) func(*testing.T, string) error {
		return func(t *testing.T, ns string) error {
			sb := makeSandbox(ns, name)
			first(sb)
			create(t, sb)
			change(sb)
			return env.Client.Update(ctx, sb)
		}
	}
	withRef := func(sb *v1alpha1.Sandbox) { sb.Spec.TemplateRef = &v1alpha1.TemplateRef{Name: "py"} }
	noop := func(*v1alpha1.Sandbox) {}
	volumes := func(n int) []corev1.PersistentVolumeClaim {
		out := make([]corev1.PersistentVolumeClaim, n)
		for i := range out {
			out[i] = withStorage(makeSandbox("", "x")).Spec.VolumeClaimTemplates[0]
			out[i].Name = fmt.Sprintf("data%d", i)
		}
		return out
	}
	twoEnv := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
	labels := map[string]v1alpha1.LabelValue{}
	for i := range 65 {
		labels[fmt.Sprintf("k%d", i)] = "v"
	}
	minusOne := int32(-1)

	return map[string]crdCase{
		// Sandbox names: a DNS label (the pod's hostname and service name).
		"sandbox: name with dots":     {sandbox("has.dots", nil), "a sandbox name is a DNS label"},
		"sandbox: name over 63":       {sandbox(long(64), nil), "a sandbox name is a DNS label"},
		"sandbox: uppercase name":     {sandbox("Upper", nil), "metadata.name"},
		"sandbox: name with '_'":      {sandbox("a_b", nil), "metadata.name"},
		"sandbox: unicode name":       {sandbox("sändbox", nil), "metadata.name"},
		"sandbox: name ending in '-'": {sandbox("ends-", nil), "metadata.name"},
		// Sandbox spec.
		"sandbox: unknown operatingMode": {sandbox("bad-mode", func(sb *v1alpha1.Sandbox) { sb.Spec.OperatingMode = "Hibernating" }), "spec.operatingMode"},
		"template: unknown idleAction":   {template("bad-idle", func(t *v1alpha1.SandboxTemplate) { t.Spec.Lifecycle.IdleAction = "Hibernate" }), "spec.lifecycle.idleAction"},
		"sandbox: unknown shutdownPolicy": {sandbox("bad-policy", func(sb *v1alpha1.Sandbox) {
			sb.Spec.Lifecycle.ShutdownPolicy = "Archive"
		}), "spec.lifecycle.shutdownPolicy"},
		"sandbox: 17 volumeClaimTemplates": {sandbox("many-volumes", func(sb *v1alpha1.Sandbox) {
			sb.Spec.VolumeClaimTemplates = volumes(17)
		}), "spec.volumeClaimTemplates"},
		"sandbox: empty templateRef name": {sandbox("empty-ref", func(sb *v1alpha1.Sandbox) {
			sb.Spec.TemplateRef = &v1alpha1.TemplateRef{}
		}), "spec.templateRef.name"},
		"sandbox: templateRef name over 63": {sandbox("long-ref", func(sb *v1alpha1.Sandbox) {
			sb.Spec.TemplateRef = &v1alpha1.TemplateRef{Name: long(64)}
		}), "spec.templateRef.name"},
		"sandbox: two env variables of one name": {sandbox("dup-env", func(sb *v1alpha1.Sandbox) { sb.Spec.Env = twoEnv }), "spec.env[1]"},
		"sandbox: no containers": {sandbox("no-containers", func(sb *v1alpha1.Sandbox) {
			sb.Spec.PodTemplate.Spec.Containers = nil
		}), "spec.podTemplate.spec.containers"},
		"sandbox: no podTemplate": {createRaw("Sandbox", "no-pod", map[string]any{}), "spec.podTemplate"},
		"sandbox: shutdownTime not a time": {createRaw("Sandbox", "bad-time", map[string]any{
			"podTemplate": rawPodTemplate(), "lifecycle": map[string]any{"shutdownTime": "tomorrow"},
		}), "spec.lifecycle.shutdownTime"},
		// Sandbox changes.
		"sandbox: templateRef changed": {updateSandbox("ref-changed", withRef, func(sb *v1alpha1.Sandbox) {
			sb.Spec.TemplateRef.Name = "other"
		}), "templateRef is immutable"},
		"sandbox: templateRef removed": {updateSandbox("ref-removed", withRef, func(sb *v1alpha1.Sandbox) {
			sb.Spec.TemplateRef = nil
		}), "templateRef cannot be added or removed"},
		"sandbox: templateRef added": {updateSandbox("ref-added", noop, withRef), "templateRef cannot be added or removed"},
		"sandbox: volumeClaimTemplates changed": {updateSandbox("vct-changed", func(sb *v1alpha1.Sandbox) { withStorage(sb) }, func(sb *v1alpha1.Sandbox) {
			sb.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}), "volumeClaimTemplates are immutable"},
		"sandbox: volumeClaimTemplates renamed": {updateSandbox("vct-renamed", func(sb *v1alpha1.Sandbox) { withStorage(sb) }, func(sb *v1alpha1.Sandbox) {
			sb.Spec.VolumeClaimTemplates[0].Name = "other"
		}), "volumeClaimTemplates are immutable"},
		"sandbox: unknown status phase": {func(t *testing.T, ns string) error {
			sb := makeSandbox(ns, "bad-phase")
			create(t, sb)
			sb.Status.Phase = "Sleeping"
			return env.Client.Status().Update(ctx, sb)
		}, "status.phase"},

		// SandboxClaim.
		"claim: name over 63":   {claim(long(64), nil), "a claim name has at most 63 characters"},
		"claim: uppercase name": {claim("Job-1", nil), "metadata.name"},
		"claim: label under sandpod.dev/": {claim("reserved-label", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Labels = map[string]v1alpha1.LabelValue{v1alpha1.LabelPool: "x"}
		}), "labels under sandpod.dev/ are reserved"},
		"claim: claim label under sandpod.dev/": {claim("reserved-claim", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Labels = map[string]v1alpha1.LabelValue{"team": "rl", v1alpha1.LabelClaim: "other"}
		}), "labels under sandpod.dev/ are reserved"},
		"claim: 65 labels": {claim("many-labels", func(c *v1alpha1.SandboxClaim) { c.Spec.Labels = labels }), "spec.labels"},
		"claim: negative ttlSecondsAfterFinished": {claim("negative-ttl", func(c *v1alpha1.SandboxClaim) {
			c.Spec.TTLSecondsAfterFinished = &minusOne
		}), "spec.ttlSecondsAfterFinished"},
		"claim: unknown shutdownPolicy": {claim("bad-policy", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Lifecycle.ShutdownPolicy = "Keep"
		}), "spec.lifecycle.shutdownPolicy"},
		"claim: empty templateRef name":        {claim("empty-ref", func(c *v1alpha1.SandboxClaim) { c.Spec.TemplateRef.Name = "" }), "spec.templateRef.name"},
		"claim: templateRef name over 63":      {claim("long-ref", func(c *v1alpha1.SandboxClaim) { c.Spec.TemplateRef.Name = long(64) }), "spec.templateRef.name"},
		"claim: two env variables of one name": {claim("dup-env", func(c *v1alpha1.SandboxClaim) { c.Spec.Env = twoEnv }), "spec.env[1]"},
		"claim: no templateRef":                {createRaw("SandboxClaim", "no-ref", map[string]any{}), "spec.templateRef"},
		"claim: shutdownTime not a time": {createRaw("SandboxClaim", "bad-time", map[string]any{
			"templateRef": map[string]any{"name": "py"}, "lifecycle": map[string]any{"shutdownTime": "soon"},
		}), "spec.lifecycle.shutdownTime"},
		"claim: templateRef changed": {func(t *testing.T, ns string) error {
			c := makeClaim(ns, "ref-changed", "py")
			create(t, c)
			c.Spec.TemplateRef.Name = "other"
			return env.Client.Update(ctx, c)
		}, "templateRef is immutable"},

		// SandboxWarmPool.
		"pool: negative replicas":        {pool("negative", func(p *v1alpha1.SandboxWarmPool) { p.Spec.Replicas = -1 }), "spec.replicas"},
		"pool: replicas over 10000":      {pool("huge", func(p *v1alpha1.SandboxWarmPool) { p.Spec.Replicas = 10001 }), "spec.replicas"},
		"pool: name over 57":             {pool(long(58), nil), "a pool name has at most 57 characters"},
		"pool: empty templateRef name":   {pool("empty-ref", func(p *v1alpha1.SandboxWarmPool) { p.Spec.TemplateRef.Name = "" }), "spec.templateRef.name"},
		"pool: templateRef name over 63": {pool("long-ref", func(p *v1alpha1.SandboxWarmPool) { p.Spec.TemplateRef.Name = long(64) }), "spec.templateRef.name"},
		"pool: no templateRef":           {createRaw("SandboxWarmPool", "no-ref", map[string]any{"replicas": int64(1)}), "spec.templateRef"},
		"pool: replicas not a number":    {createRaw("SandboxWarmPool", "text-replicas", map[string]any{"templateRef": map[string]any{"name": "py"}, "replicas": "two"}), "spec.replicas"},
		"pool: templateRef changed": {func(t *testing.T, ns string) error {
			p := makePool(ns, "ref-changed", "py", 0)
			create(t, p)
			p.Spec.TemplateRef.Name = "other"
			return env.Client.Update(ctx, p)
		}, "templateRef is immutable"},
		"pool: scaled to negative replicas": {func(t *testing.T, ns string) error {
			p := makePool(ns, "scaled", "py", 0)
			create(t, p)
			scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scaled"}, Spec: autoscalingv1.ScaleSpec{Replicas: -3}}
			return env.Client.SubResource("scale").Update(ctx, p, client.WithSubResourceBody(scale))
		}, "replicas"},

		// SandboxTemplate.
		"template: empty runtimeClassName": {template("empty-runtime", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.RuntimeClassName = new(string)
		}), "spec.runtimeClassName"},
		"template: runtimeClassName over 253": {template("long-runtime", func(tp *v1alpha1.SandboxTemplate) {
			s := long(254)
			tp.Spec.RuntimeClassName = &s
		}), "spec.runtimeClassName"},
		"template: unknown egress": {template("bad-egress", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: "Intranet"}
		}), "spec.networkPolicy.egress"},
		"template: unknown shutdownPolicy": {template("bad-policy", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.Lifecycle.ShutdownPolicy = "Never"
		}), "spec.lifecycle.shutdownPolicy"},
		"template: no containers": {template("no-containers", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.PodTemplate.Spec.Containers = nil
		}), "spec.podTemplate.spec.containers"},
		"template: agentContainer names no container": {template("bad-agent-container", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.AgentContainer = "sidecar"
		}), "agentContainer must name a container"},
		"sandbox: agentContainer names no container": {sandbox("bad-agent-container", func(sb *v1alpha1.Sandbox) {
			sb.Spec.AgentContainer = "sidecar"
		}), "agentContainer must name a container"},
		"template: no podTemplate": {createRaw("SandboxTemplate", "no-pod", map[string]any{}), "spec.podTemplate"},
		"template: uppercase name": {template("Python", func(*v1alpha1.SandboxTemplate) {}), "metadata.name"},
		// Gaps closed by CEL rules on the types.
		"sandbox: volumeClaimTemplates removed": {updateSandbox("vct-removed", func(sb *v1alpha1.Sandbox) { withStorage(sb) },
			func(sb *v1alpha1.Sandbox) { sb.Spec.VolumeClaimTemplates = nil }), "volumeClaimTemplates"},
		"sandbox: volumeClaimTemplates added": {updateSandbox("vct-added", noop,
			func(sb *v1alpha1.Sandbox) { withStorage(sb) }), "volumeClaimTemplates"},
		"sandbox: idleTimeout not a duration": {createRaw("Sandbox", "bad-idle", map[string]any{
			"podTemplate": rawPodTemplate(), "lifecycle": map[string]any{"idleTimeout": "soon"},
		}), "idleTimeout"},
		"sandbox: idleTimeout negative": {createRaw("Sandbox", "neg-idle", map[string]any{
			"podTemplate": rawPodTemplate(), "lifecycle": map[string]any{"idleTimeout": "-5m"},
		}), "idleTimeout"},
		"template: defaultTTL not a duration": {createRaw("SandboxTemplate", "bad-ttl", map[string]any{
			"podTemplate": rawPodTemplate(), "lifecycle": map[string]any{"defaultTTL": "1 hour"},
		}), "defaultTTL"},
		"template: empty container list": {template("empty-containers", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.PodTemplate.Spec.Containers = []corev1.Container{}
		}), "containers"},
		"template: allowedEgress not a CIDR": {template("egress-not-cidr", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.1"}}}
		}), "allowedEgress[0].cidr"},
		"template: allowedEgress v4 length 33": {template("egress-33", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/33"}}}
		}), "allowedEgress[0].cidr"},
		"template: allowedEgress port 0": {template("egress-port-0", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8", Ports: []int32{0}}}}
		}), "ports[0]"},
		"template: allowedEgress with egress None": {template("egress-none-rules", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressNone, AllowedEgress: []v1alpha1.EgressRule{{CIDR: "10.0.0.0/8"}}}
		}), "allowedEgress goes with egress: Allowlist"},
		"template: egress Allowlist without rules": {template("egress-allow-empty", func(tp *v1alpha1.SandboxTemplate) {
			tp.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Egress: v1alpha1.EgressAllowlist}
		}), "allowedEgress goes with egress: Allowlist"},
		"claim: label key not a label key": {claim("bad-label-key", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Labels = map[string]v1alpha1.LabelValue{"bad key": "spaces are bad"}
		}), "label keys"},
		"claim: label name too long": {claim("long-label-key", func(c *v1alpha1.SandboxClaim) { c.Spec.Labels = map[string]v1alpha1.LabelValue{long(64): "v"} }), "label keys"},
		// Values by their schema (v1alpha1.LabelValue): once accepted here and
		// refused only when the claim was served.
		"claim: label value not a label value": {claim("bad-label-value", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Labels = map[string]v1alpha1.LabelValue{"team": "a/b"}
		}), "spec.labels.team"},
		"claim: label value too long": {claim("long-label-value", func(c *v1alpha1.SandboxClaim) {
			c.Spec.Labels = map[string]v1alpha1.LabelValue{"team": v1alpha1.LabelValue(long(64))}
		}), "spec.labels.team"},
	}
}

// createTemplate creates a template after edit changes it.
func createTemplate(name string, edit func(*v1alpha1.SandboxTemplate)) func(*testing.T, string) error {
	return func(_ *testing.T, ns string) error {
		tp := makeTemplate(ns, name)
		edit(tp)
		return env.Client.Create(ctx, tp)
	}
}

// createRaw creates an object from a raw spec, for what the typed structs
// cannot express (a missing required field, a string where a time goes).
func createRaw(kind, name string, spec map[string]any) func(*testing.T, string) error {
	return func(_ *testing.T, ns string) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(),
			"kind":       kind,
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       spec,
		}}
		return env.Client.Create(ctx, u)
	}
}

func rawPodTemplate() map[string]any {
	return map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": "main", "image": "python:3.13-slim"},
	}}}
}
