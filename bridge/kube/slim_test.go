package kube

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lowmem"
)

// fullMember is a pool member as the API server sends it: pod template,
// managedFields, status with conditions, owner reference to its pool.
func fullMember() *v1alpha1.Sandbox {
	now := metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "warm-abc12", UID: "u-1", ResourceVersion: "42", Generation: 2,
			CreationTimestamp: now,
			Labels:            map[string]string{v1alpha1.LabelPool: "warm", v1alpha1.LabelTemplate: "warm", "team": "rl"},
			Annotations:       map[string]string{"note": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "sandpod.dev/v1alpha1", Kind: "SandboxWarmPool",
				Name: "warm", UID: "pool-uid", Controller: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "sandpod-controller", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: v1alpha1.SandboxSpec{
			TemplateRef: &v1alpha1.TemplateRef{Name: "warm"},
			PodTemplate: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: "python:3.13", Command: []string{"sleep", "inf"},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
					Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
			Service:              true,
			Lifecycle:            v1alpha1.Lifecycle{IdleTimeout: &metav1.Duration{Duration: time.Minute}},
			Env:                  []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}},
		},
		Status: v1alpha1.SandboxStatus{
			Phase: v1alpha1.SandboxRunning, PodName: "warm-abc12", PodIPs: []string{"10.0.0.7"},
			ServiceFQDN: "warm-abc12.ns.svc.cluster.local", ObservedGeneration: 2, LastActivityTime: &now, AgentRestarts: 1,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "PodReady", LastTransitionTime: now}},
		},
	}
}

// TestSlimSandboxAnswersAlike: a sandbox kept slim in the cache gives the
// same answer to a client and the same claim patch as the full object, so
// the informer's transform changes nothing a caller sees.
func TestSlimSandboxAnswersAlike(t *testing.T) {
	full := fullMember()
	out, err := lowmem.SandboxTransform()(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*v1alpha1.Sandbox)
	if len(slim.Spec.PodTemplate.Spec.Containers) != 0 || slim.ManagedFields != nil {
		t.Fatalf("transform kept the pod template or managedFields: %+v", slim)
	}
	if len(slim.Spec.VolumeClaimTemplates) != 1 || slim.Status.PodIPs[0] != "10.0.0.7" {
		t.Fatalf("transform dropped what the bridge reads: %+v", slim)
	}
	if a, b := sandboxToProto(full, ""), sandboxToProto(slim, ""); !proto.Equal(a, b) {
		t.Errorf("answer of a pool member:\nfull %v\nslim %v", a, b)
	}
	if a, b := adopt.ToPoolMember(full), adopt.ToPoolMember(slim); a != b {
		t.Errorf("pool member view: full %+v, slim %+v", a, b)
	}

	// The claim's one write, and the answer once it is claimed.
	take := func(sb *v1alpha1.Sandbox) {
		adopt.Take(sb, adopt.Holder{Labels: map[string]string{v1alpha1.LabelClaim: "req"}, RequestID: "req",
			Env: []corev1.EnvVar{{Name: "TOKEN", Value: "t"}}, Annotations: map[string]string{v1alpha1.AnnotationLease: "10m0s"}})
	}
	_, pf, err := adopt.TakeWrite(full, take)
	if err != nil {
		t.Fatal(err)
	}
	_, ps, err := adopt.TakeWrite(slim, take)
	if err != nil {
		t.Fatal(err)
	}
	bf, _ := pf.Data(full)
	bs, _ := ps.Data(slim)
	if string(bf) != string(bs) {
		t.Errorf("claim patch:\nfull %s\nslim %s", bf, bs)
	}
	claimedFull, claimedSlim := full.DeepCopy(), slim.DeepCopy()
	take(claimedFull)
	take(claimedSlim)
	if a, b := sandboxToProto(claimedFull, ""), sandboxToProto(claimedSlim, ""); !proto.Equal(a, b) || !a.GetClaimed() {
		t.Errorf("answer of a claimed sandbox:\nfull %v\nslim %v", a, b)
	}

	// What the bridge remembers of its own writes is slim too, and answers alike.
	r := newRecentWrites()
	r.put(claimedFull)
	got := r.fresher("ns", "warm-abc12", nil)
	if got == nil || len(got.Spec.PodTemplate.Spec.Containers) != 0 || len(claimedFull.Spec.PodTemplate.Spec.Containers) != 1 {
		t.Fatalf("recent write: %+v (the written object must be left as it was)", got)
	}
	if a, b := sandboxToProto(claimedFull, ""), sandboxToProto(got, ""); !proto.Equal(a, b) {
		t.Errorf("answer from a recent write:\nfull %v\nslim %v", a, b)
	}

	// So is what it keeps of a warm take's answer (adopt.Taken.Keep, as
	// the Backend sets it) until the cache shows the take.
	r = newRecentWrites()
	taken := adopt.NewTaken(r.store)
	taken.Keep = slimCopy
	answer := claimedFull.DeepCopy()
	taken.Took(answer)
	got = r.fresher("ns", "warm-abc12", nil)
	if got == nil || len(got.Spec.PodTemplate.Spec.Containers) != 0 || len(answer.Spec.PodTemplate.Spec.Containers) != 1 {
		t.Fatalf("take kept: %+v (the answer must be left as it was)", got)
	}
	if a, b := sandboxToProto(answer, ""), sandboxToProto(got, ""); !proto.Equal(a, b) {
		t.Errorf("answer from a take:\nfull %v\nslim %v", a, b)
	}
}

// TestSlimSandboxIsNeverRead: the only code of the bridge (and of the
// packages it takes sandboxes through) that names a podTemplate reads a
// SandboxTemplate's, or is the transform itself. A new reader of a cached
// Sandbox's spec.podTemplate would find it empty: it must read the
// template instead, or the transform must keep what it needs.
func TestSlimSandboxIsNeverRead(t *testing.T) {
	allowed := map[string][]string{
		"bridge/kube/convert.go":         {"templateToProto"}, // a SandboxTemplate's
		"bridge/kube/recent.go":          {"slimCopy"},
		"core/lifecycle/fromtemplate.go": {"SandboxSpecFromTemplate"}, // template → new sandbox spec
	}
	root := filepath.Join("..", "..")
	for _, dir := range []string{"bridge", "bridge/kube", "bridge/httpapi", "bridge/preview", "bridge/check", "core/adopt", "core/lifecycle", "core/readyourwrites", "core/patch"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(os.PathSeparator)))
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if ok && sel.Sel.Name == "PodTemplate" && !slices.Contains(allowed[rel], fn.Name.Name) {
						t.Errorf("%s: %s reads a PodTemplate: the bridge's cached sandboxes have none (core/lowmem/slim.go); read the SandboxTemplate, or keep the field in lowmem.slimSandbox",
							fset.Position(sel.Pos()), fn.Name.Name)
					}
					return true
				})
			}
		}
	}
}
