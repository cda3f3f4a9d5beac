package v1alpha1

import "fmt"

// Names of the objects that belong to a sandbox, shared by the controller
// that makes them and the bridge that reads them.

// SecretName is the name of a sandbox's agent Secret.
func SecretName(sandbox string) string { return sandbox + "-agent" }

// ServiceFQDN is the stable DNS name of a sandbox with a service.
func ServiceFQDN(sb *Sandbox) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", sb.Name, sb.Namespace)
}
