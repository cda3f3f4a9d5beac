package lowmem

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// fresh is s in an allocation of its own, as a decoder returns it.
func fresh(s string) string { return string([]byte(s)) }

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestInterner(t *testing.T) {
	long := strings.Repeat("x", maxInternedLen+1)
	cases := []struct {
		name   string
		seen   []string
		s      string
		shared bool
	}{
		{"seen before", []string{"bench"}, "bench", true},
		{"new", []string{"other"}, "bench", false},
		{"too long to keep", []string{long}, long, false},
		{"past the bound it starts over", []string{"bench", "a", "b", "c"}, "bench", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := &interner{set: map[string]string{}, max: 3}
			var first string
			for _, s := range c.seen {
				if got := in.of(fresh(s)); s == c.s && first == "" {
					first = got
				}
			}
			s := fresh(c.s)
			got := in.of(s)
			if got != c.s {
				t.Fatalf("of(%q) = %q", c.s, got)
			}
			if shared := first != "" && same(got, first); shared != c.shared {
				t.Errorf("shared the first copy: %v, want %v", shared, c.shared)
			}
		})
	}
}

func TestInternMetaKeepsTheValues(t *testing.T) {
	truth := true
	meta := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{
			Name: fresh("sb-1"), Namespace: fresh("bench"),
			Labels:          map[string]string{fresh(v1alpha1.LabelSandbox): fresh("sb-1"), fresh(v1alpha1.LabelTemplate): fresh("warm")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("sandpod.dev/v1alpha1"), Kind: fresh("Sandbox"), Name: fresh("sb-1"), UID: "u", Controller: &truth}},
			Finalizers:      []string{fresh("sandpod.dev/cleanup")},
		}
	}
	a, b := meta(), meta()
	want := a.DeepCopy()
	internMeta(a)
	internMeta(b)
	if !equality.Semantic.DeepEqual(a, want) {
		t.Fatalf("interning changed the object:\n got %+v\nwant %+v", a, want)
	}
	if !same(a.Namespace, b.Namespace) || !same(a.Labels[v1alpha1.LabelTemplate], b.Labels[v1alpha1.LabelTemplate]) ||
		!same(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind) || !same(a.Finalizers[0], b.Finalizers[0]) {
		t.Errorf("two objects keep their own copies of the shared strings")
	}
	// The object's name is not interned (unique), but the label and owner
	// naming it reuse its string.
	if !same(a.Labels[v1alpha1.LabelSandbox], a.Name) || !same(a.OwnerReferences[0].Name, a.Name) {
		t.Errorf("a label or owner equal to the name keeps its own copy")
	}
}

func TestTransformsKeepTheValues(t *testing.T) {
	pod := fullPod()
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	wantPod := TrimPod(pod.DeepCopy())
	gotPod, err := PodTransform(pod)
	if err != nil || !equality.Semantic.DeepEqual(gotPod, wantPod) {
		t.Errorf("pod transform changed what it keeps (%v):\n got %+v\nwant %+v", err, gotPod, wantPod)
	}

	sb := &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns", Labels: map[string]string{v1alpha1.LabelPool: "warm"}},
		Spec:       v1alpha1.SandboxSpec{TemplateRef: &v1alpha1.TemplateRef{Name: "warm"}, PodTemplate: podTemplate()},
		Status: v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxRunning, PodName: "sb", AgentAuth: v1alpha1.AgentAuthClientCertificate,
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "PodReady", Message: "m"}}},
	}
	wantSB := sb.DeepCopy()
	gotSB, err := DefaultTransform(sb)
	if err != nil || !equality.Semantic.DeepEqual(gotSB, wantSB) {
		t.Errorf("sandbox transform changed it (%v):\n got %+v\nwant %+v", err, gotSB, wantSB)
	}
}
