package engine

import (
	"fmt"
	"sort"
	"strings"
)

// localRuntimeClasses are the RuntimeClass names a local template may ask
// for: the local engine runs every sandbox under runc on the host's kernel,
// so none yet ("" is the default, runc). A runtime the engine learns to run
// (gVisor, for one) goes in here.
var localRuntimeClasses = map[string]bool{}

// checkRuntimeClass refuses a runtime class the local engine cannot honour:
// running its sandboxes under runc instead would give them less isolation
// than the template asks for (the host's kernel instead of a second one).
// field names where the template says it.
func checkRuntimeClass(template, field, class string, allowed map[string]bool) error {
	if class == "" || allowed[class] {
		return nil
	}
	can := "only runc (leave runtimeClassName empty)"
	if len(allowed) > 0 {
		names := make([]string, 0, len(allowed))
		for n := range allowed {
			names = append(names, n)
		}
		sort.Strings(names)
		can = "runc (runtimeClassName empty) or " + strings.Join(names, ", ")
	}
	return fmt.Errorf("config: SandboxTemplate %s: %s is %q, which the local engine cannot honour: it runs %s, on the host's kernel; remove the field for sandpod serve, or use Kubernetes for this runtime class", template, field, class, can)
}
