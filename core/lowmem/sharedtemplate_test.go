package lowmem

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// podTemplate is a pod template as a sandbox carries it, decoded anew
// (its own slices, maps and strings) at every call.
func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "py"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "python:3.13-slim", Command: []string{"sleep", "infinity"},
				Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func TestTemplateSharer(t *testing.T) {
	otherImage := podTemplate()
	otherImage.Spec.Containers[0].Image = "python:3.12"
	otherEnv := podTemplate() // same key (names, images), other contents
	otherEnv.Spec.Containers[0].Env[0].Value = "2"
	emptyArgs := podTemplate() // equal but for an empty list where nil was
	emptyArgs.Spec.Containers[0].Args = []string{}

	cases := []struct {
		name   string
		first  corev1.PodTemplateSpec
		second corev1.PodTemplateSpec
		shared bool
	}{
		{"equal templates share", podTemplate(), podTemplate(), true},
		{"another image does not", podTemplate(), otherImage, false},
		{"the same containers with other env do not", podTemplate(), otherEnv, false},
		{"an empty list is not nil", podTemplate(), emptyArgs, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTemplateSharer(16, 4)
			first, second := c.first, c.second
			want := *second.DeepCopy()
			if s.share(&first) {
				t.Fatalf("the first template shared a copy of nothing")
			}
			got := s.share(&second)
			if got != c.shared {
				t.Errorf("shared %v, want %v", got, c.shared)
			}
			// Shared or not, the sandbox reads what the API server sent.
			if !equalTemplateValue(second, want) {
				t.Errorf("template changed by sharing:\n got %+v\nwant %+v", second, want)
			}
			if same := &second.Spec.Containers[0] == &first.Spec.Containers[0]; same != c.shared {
				t.Errorf("containers are the first's: %v, want %v", same, c.shared)
			}
		})
	}
}

func equalTemplateValue(a, b corev1.PodTemplateSpec) bool {
	return equalTemplate(&a, []*corev1.PodTemplateSpec{&b}) != nil
}

func TestTemplateSharerBounds(t *testing.T) {
	s := newTemplateSharer(3, 2)
	tmpl := func(env string) *corev1.PodTemplateSpec {
		p := podTemplate()
		p.Spec.Containers[0].Env[0].Value = env // one key for all
		return &p
	}
	for _, env := range []string{"a", "b", "c"} {
		s.share(tmpl(env))
	}
	// Two per key, the newest: "a" was dropped, "c" and "b" kept.
	if s.share(tmpl("a")) || !s.share(tmpl("c")) || s.n != 2 {
		t.Errorf("per-key bound: n=%d", s.n)
	}
	other := podTemplate()
	other.Spec.Containers[0].Image = "other"
	s.share(&other) // the third
	fourth := podTemplate()
	fourth.Spec.Containers[0].Image = "fourth"
	s.share(&fourth) // past the bound: starts over with it alone
	if s.n != 1 || !s.share(&fourth) || s.share(tmpl("c")) {
		t.Errorf("starting over: n=%d", s.n)
	}
}

func TestKeepNewest(t *testing.T) {
	a, b, c := &corev1.PodTemplateSpec{}, &corev1.PodTemplateSpec{}, &corev1.PodTemplateSpec{}
	cases := []struct {
		name  string
		kept  []*corev1.PodTemplateSpec
		per   int
		want  []*corev1.PodTemplateSpec
		added int
	}{
		{"empty", nil, 2, []*corev1.PodTemplateSpec{c}, 1},
		{"room", []*corev1.PodTemplateSpec{a}, 2, []*corev1.PodTemplateSpec{c, a}, 1},
		{"full: the oldest goes", []*corev1.PodTemplateSpec{b, a}, 2, []*corev1.PodTemplateSpec{c, b}, 0},
		{"one per key", []*corev1.PodTemplateSpec{a}, 1, []*corev1.PodTemplateSpec{c}, 0},
	}
	for _, tc := range cases {
		got, added := keepNewest(tc.kept, c, tc.per)
		if added != tc.added || len(got) != len(tc.want) {
			t.Errorf("%s: %d added, %d kept; want %d, %d", tc.name, added, len(got), tc.added, len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: [%d] is not the one expected", tc.name, i)
			}
		}
	}
}

func TestSandboxTransformSharesTheTemplate(t *testing.T) {
	sandboxOf := func() *v1alpha1.Sandbox {
		return &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
			Spec:       v1alpha1.SandboxSpec{PodTemplate: podTemplate()},
		}
	}
	a, err := DefaultTransform(sandboxOf())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DefaultTransform(sandboxOf())
	sa, sb := a.(*v1alpha1.Sandbox), b.(*v1alpha1.Sandbox)
	if &sa.Spec.PodTemplate.Spec.Containers[0] != &sb.Spec.PodTemplate.Spec.Containers[0] {
		t.Errorf("two sandboxes of one template keep a copy each")
	}
	if sb.ManagedFields != nil {
		t.Errorf("managedFields kept")
	}
	// CachedForm (the bench's sizes) is what the cache keeps.
	if c := CachedForm(sandboxOf()).(*v1alpha1.Sandbox); &c.Spec.PodTemplate.Spec.Containers[0] != &sa.Spec.PodTemplate.Spec.Containers[0] {
		t.Errorf("CachedForm does not share the template")
	}
	// Other kinds only lose managedFields.
	svc, _ := DefaultTransform(&corev1.Service{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}}})
	if svc.(*corev1.Service).ManagedFields != nil {
		t.Errorf("managedFields kept on a Service")
	}
}

// BenchmarkShareEqual is the cost per sandbox event (an equal template).
func BenchmarkShareEqual(b *testing.B) {
	s := newTemplateSharer(16, 4)
	first := podTemplate()
	s.share(&first)
	ts := make([]corev1.PodTemplateSpec, b.N)
	for i := range ts {
		ts[i] = podTemplate()
	}
	b.ResetTimer()
	for i := range ts {
		s.share(&ts[i])
	}
}

// BenchmarkSandboxTransform is the cache's cost per sandbox event: strip,
// share the template, intern.
func BenchmarkSandboxTransform(b *testing.B) {
	sbs := make([]*v1alpha1.Sandbox, b.N)
	for i := range sbs {
		sbs[i] = &v1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns", Labels: map[string]string{v1alpha1.LabelPool: "warm", v1alpha1.LabelTemplate: "warm"}},
			Spec:       v1alpha1.SandboxSpec{TemplateRef: &v1alpha1.TemplateRef{Name: "warm"}, PodTemplate: podTemplate()},
			Status:     v1alpha1.SandboxStatus{Phase: v1alpha1.SandboxRunning, Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "PodReady"}}},
		}
	}
	b.ResetTimer()
	for i := range sbs {
		_, _ = DefaultTransform(sbs[i])
	}
}
