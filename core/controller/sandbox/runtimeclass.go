package sandbox

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RuntimeClass policy modes (controller flag --runtime-class-policy).
const (
	RuntimeClassNone    = "none"    // leave pods as their template says
	RuntimeClassRequire = "require" // refuse sandboxes whose pod names no RuntimeClass
	RuntimeClassDefault = "default" // give such pods the default RuntimeClass
)

// ErrRuntimeClassRequired marks a sandbox the policy refuses.
var ErrRuntimeClassRequired = errors.New("a RuntimeClass is required by the controller's policy")

// RuntimeClassPolicy is the controller-wide RuntimeClass policy. The
// controller does not isolate anything itself; the RuntimeClass (gVisor,
// Kata) does, and this policy makes sure every sandbox pod names one.
type RuntimeClassPolicy struct {
	Mode    string
	Default string
}

// Validate checks the flags' combination.
func (p RuntimeClassPolicy) Validate() error {
	switch p.Mode {
	case "", RuntimeClassNone, RuntimeClassRequire:
		return nil
	case RuntimeClassDefault:
		if p.Default == "" {
			return fmt.Errorf("runtime class policy %q needs a default runtime class", p.Mode)
		}
		return nil
	default:
		return fmt.Errorf("unknown runtime class policy %q (want none, require or default)", p.Mode)
	}
}

// Apply enforces the policy on a pod spec.
func (p RuntimeClassPolicy) Apply(spec *corev1.PodSpec) error {
	if spec.RuntimeClassName != nil && *spec.RuntimeClassName != "" {
		return nil
	}
	switch p.Mode {
	case RuntimeClassRequire:
		return ErrRuntimeClassRequired
	case RuntimeClassDefault:
		if p.Default == "" {
			return ErrRuntimeClassRequired
		}
		rc := p.Default
		spec.RuntimeClassName = &rc
	}
	return nil
}
