package preview

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	sandpodv1 "github.com/sandpod/sandpod/proto/sandpod/v1"
)

// ExposureStore is implemented by a backend that keeps port previews on
// its own objects (Kubernetes: the sandbox's AnnotationExposedPorts), so
// that a restarted bridge, and every replica of it, serves the same
// previews. Without one (the local engine) the bridge keeps them itself,
// in memory and in Options.StatePath.
type ExposureStore interface {
	// Exposures returns the ports recorded on a sandbox and its UID.
	Exposures(ctx context.Context, namespace, name string) (uid string, ports []v1alpha1.ExposedPort, err error)
	// ExposureByID finds the sandbox whose list holds exposure id; ok is
	// false when none does (or, defensively, when more than one does).
	ExposureByID(ctx context.Context, id string) (namespace, name, uid string, port v1alpha1.ExposedPort, ok bool)
	// UpdateExposures rewrites a sandbox's list in one write: change gets
	// the sandbox's UID and current list and returns the new one (or an
	// error, which is returned as is). A write that adds a port to a
	// sandbox being suspended is refused (FAILED_PRECONDITION).
	UpdateExposures(ctx context.Context, namespace, name string, change func(uid string, cur []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error)) error
}

func protocolWord(p sandpodv1.PortProtocol) string {
	if p == sandpodv1.PortProtocol_PORT_PROTOCOL_TCP {
		return "tcp"
	}
	return "http"
}

func protocolOf(w string) sandpodv1.PortProtocol {
	if w == "tcp" {
		return sandpodv1.PortProtocol_PORT_PROTOCOL_TCP
	}
	return sandpodv1.PortProtocol_PORT_PROTOCOL_HTTP
}

func exposureOf(ns, name, uid string, p v1alpha1.ExposedPort) *exposure {
	return &exposure{ID: p.ID, Namespace: ns, Sandbox: name, UID: uid, Port: p.Port, Protocol: protocolOf(p.Protocol)}
}

func recordOf(e *exposure, created time.Time) v1alpha1.ExposedPort {
	return v1alpha1.ExposedPort{ID: e.ID, Port: e.Port, Protocol: protocolWord(e.Protocol), Created: metav1.NewTime(created)}
}

// lookup finds the exposure a preview host names (nil when none).
func (s *Server) lookupExposure(ctx context.Context, id string) *exposure {
	if st := s.previews.store; st != nil {
		ns, name, uid, p, ok := st.ExposureByID(ctx, id)
		if !ok {
			return nil
		}
		return exposureOf(ns, name, uid, p)
	}
	return s.previews.get(id)
}

// storedExposures lists a sandbox's exposures from the store (its
// incarnation's only: the list lives on the object).
func storedExposures(ctx context.Context, st ExposureStore, ns, name string) ([]*exposure, string, error) {
	uid, list, err := st.Exposures(ctx, ns, name)
	if err != nil {
		return nil, "", err
	}
	out := make([]*exposure, 0, len(list))
	for _, p := range list {
		out = append(out, exposureOf(ns, name, uid, p))
	}
	return out, uid, nil
}

// forgetStored clears a sandbox's stored list when the preview listener
// finds the sandbox not running (a suspend the bridge did not make): after
// a resume its old links must not come back. A no-op (no write) when the
// list is already empty.
func (p *previews) forgetStored(ctx context.Context, ns, name string) {
	if p.store == nil {
		return
	}
	_ = p.store.UpdateExposures(ctx, ns, name, func(string, []v1alpha1.ExposedPort) ([]v1alpha1.ExposedPort, error) {
		return nil, nil
	})
}
