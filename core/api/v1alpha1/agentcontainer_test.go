package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAgentContainerIndex(t *testing.T) {
	two := &corev1.PodSpec{Containers: []corev1.Container{{Name: "redis"}, {Name: "main"}}}
	for _, tc := range []struct {
		name string
		spec *corev1.PodSpec
		want int
	}{
		{"", two, 0},
		{"main", two, 1},
		{"redis", two, 0},
		{"missing", two, -1},
		{"", &corev1.PodSpec{}, -1},
		{"main", &corev1.PodSpec{}, -1},
	} {
		if got := AgentContainerIndex(tc.spec, tc.name); got != tc.want {
			t.Errorf("AgentContainerIndex(%d containers, %q) = %d, want %d", len(tc.spec.Containers), tc.name, got, tc.want)
		}
	}
}
