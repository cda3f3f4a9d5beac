package v1alpha1

import (
	"encoding/json"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationExposedPorts holds a sandbox's port previews (ExposePort) as a
// small JSON list of ExposedPort. The bridge writes it (one merge patch per
// ExposePort or UnexposePort, cleared in the patch that suspends), so every
// bridge replica, and a restarted bridge, serves the same previews; the
// controller never writes it except to clear it when it suspends an idle
// sandbox. It lives and dies with the object: a new sandbox that reuses the
// name starts without it.
const AnnotationExposedPorts = "sandpod.dev/exposed-ports"

// MaxExposedPorts bounds the exposures of one sandbox (and the annotation's
// size: about 100 bytes an entry).
const MaxExposedPorts = 32

// ExposedPort is one entry of AnnotationExposedPorts (an annotation's
// JSON, not a field of the API: no deepcopy).
// +kubebuilder:object:generate=false
type ExposedPort struct {
	// ID is the random part of the preview host (p<port>-<id>): 16
	// lower-case base32 letters.
	ID   string `json:"id"`
	Port int32  `json:"port"`
	// Protocol is "http" or "tcp".
	Protocol string      `json:"protocol"`
	Created  metav1.Time `json:"created"`
}

// ValidExposureID says whether id can be the id of an exposure: what
// parsePreviewHost accepts, so an annotation cannot name a host that no
// preview URL reaches.
func ValidExposureID(id string) bool {
	return id != "" && len(id) <= 32 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") == ""
}

// ParseExposedPorts reads the annotation. The annotation can be written by
// anyone who may patch the sandbox, so it is read defensively: entries that
// are malformed (an id that is not a host label, a port out of range or the
// agent's own, an unknown protocol, a port or id listed twice) are dropped,
// and at most MaxExposedPorts are kept. A value that is not JSON reads as
// no exposures.
func ParseExposedPorts(s string) []ExposedPort {
	if s == "" {
		return nil
	}
	var in []ExposedPort
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil
	}
	out := make([]ExposedPort, 0, len(in))
	ports, ids := map[int32]bool{}, map[string]bool{}
	for _, e := range in {
		if !ValidExposureID(e.ID) || e.Port < 1 || e.Port > 65535 || e.Port == AgentPort || e.Port == AgentHealthPort ||
			(e.Protocol != "http" && e.Protocol != "tcp") || ports[e.Port] || ids[e.ID] || len(out) == MaxExposedPorts {
			continue
		}
		ports[e.Port], ids[e.ID] = true, true
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// FormatExposedPorts is the annotation's value for list, "" when empty
// (the annotation is then removed).
func FormatExposedPorts(list []ExposedPort) string {
	if len(list) == 0 {
		return ""
	}
	sorted := append([]ExposedPort(nil), list...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Port < sorted[j].Port })
	b, _ := json.Marshal(sorted)
	return string(b)
}
