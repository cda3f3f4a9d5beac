package v1alpha1

import corev1 "k8s.io/api/core/v1"

// AgentContainerIndex is the index in spec.Containers of the sandbox
// container, the one the agent serves: the container named, else the first.
// It is -1 when the name matches no container or there is none (the CRDs
// refuse such a spec; a caller reports it rather than guessing).
func AgentContainerIndex(spec *corev1.PodSpec, name string) int {
	if len(spec.Containers) == 0 {
		return -1
	}
	if name == "" {
		return 0
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return i
		}
	}
	return -1
}
