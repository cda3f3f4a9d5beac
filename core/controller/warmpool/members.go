package warmpool

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// Selector is the label selector of a pool's members (scale subresource).
func Selector(pool string) string { return v1alpha1.LabelPool + "=" + pool }

// NewMember is a new member of pool made from template t with hash.
func NewMember(pool *v1alpha1.SandboxWarmPool, t *v1alpha1.SandboxTemplate, hash string) *v1alpha1.Sandbox {
	truth := true
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Namespace:    pool.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelPool:         pool.Name,
				v1alpha1.LabelTemplate:     t.Name,
				v1alpha1.LabelTemplateHash: hash,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "SandboxWarmPool",
				Name: pool.Name, UID: pool.UID, Controller: &truth, BlockOwnerDeletion: &truth,
			}},
		},
		Spec: lifecycle.SandboxSpecFromTemplate(t.Name, &t.Spec),
	}
}
