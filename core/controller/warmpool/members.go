package warmpool

import (
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Selector is the label selector of a pool's members (scale subresource).
func Selector(pool string) string { return v1alpha1.LabelPool + "=" + pool }
