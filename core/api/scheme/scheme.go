// Package scheme is the runtime scheme of sandpod's Kubernetes clients: the
// core kinds and sandpod.dev. It lives with the API types (not in the
// controller) so the bridge builds its client without the controller.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// New is a scheme with the core kinds and sandpod.dev.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
