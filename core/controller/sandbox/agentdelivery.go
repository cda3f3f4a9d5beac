package sandbox

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// AgentDelivery is how the agent binary gets into a sandbox pod.
type AgentDelivery string

const (
	// AgentImageVolume mounts the agent image as a read-only image volume
	// (Kubernetes 1.35+ by default; containerd 2.1+ or CRI-O). The pod's
	// container starts at once: no init container, which costs a cold start
	// about a second (the kubelet notices an init container's exit on its
	// next relist).
	AgentImageVolume AgentDelivery = "image-volume"
	// AgentInitContainer copies the binary from the agent image into an
	// emptyDir with an init container: works on every cluster.
	AgentInitContainer AgentDelivery = "init-container"
	// AgentDeliveryAuto picks image-volume on API servers of 1.35 or newer
	// (where image volumes are on by default), init-container before.
	AgentDeliveryAuto AgentDelivery = "auto"
)

// imageVolumeDefaultSince is the first Kubernetes release with image volumes
// enabled by default (beta).
var imageVolumeDefaultSince = version.MustParseGeneric("1.35.0")

// ResolveAgentDelivery turns a --agent-delivery value into a delivery, given
// the API server's version (a gitVersion such as "v1.37.2").
func ResolveAgentDelivery(flag, serverVersion string) (AgentDelivery, error) {
	switch d := AgentDelivery(flag); d {
	case AgentImageVolume, AgentInitContainer:
		return d, nil
	case AgentDeliveryAuto, "":
		v, err := version.ParseGeneric(serverVersion)
		if err != nil {
			return "", fmt.Errorf("--agent-delivery=auto: API server version %q: %w", serverVersion, err)
		}
		if v.AtLeast(imageVolumeDefaultSince) {
			return AgentImageVolume, nil
		}
		return AgentInitContainer, nil
	}
	return "", fmt.Errorf("--agent-delivery=%q: want auto, %s or %s", flag, AgentImageVolume, AgentInitContainer)
}

// agentImageDir is the directory of the binary inside the agent image, as an
// image volume's subPath.
func agentImageDir() string {
	return strings.TrimPrefix(AgentImageBinary[:strings.LastIndex(AgentImageBinary, "/")], "/")
}
