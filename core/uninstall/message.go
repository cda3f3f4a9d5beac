package uninstall

import (
	"fmt"
	"strings"
)

// Release is the Helm release the check runs for (the chart passes it), so
// that the refusal can print the exact commands; an empty Name: run by hand.
type Release struct {
	Name, Namespace string
	Revision        int
}

// maxListed Sandboxes are named in a refusal; the rest are counted.
const maxListed = 20

// RefusalMessage says how many Sandboxes exist, names up to maxListed of
// them (namespace/name), and the two ways out. A refused pre-delete hook
// leaves the Helm release "uninstalling", and `helm upgrade` will not
// upgrade such a release ("has no deployed releases"): the way to set the
// value after a refusal is a rollback to the same revision first, which
// changes nothing in the cluster.
func RefusalMessage(n int, names []string, r Release) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refusing: %d %s (all namespaces); nothing was deleted.\n", n, plural(n, "Sandbox exists", "Sandboxes exist"))
	for i, name := range names {
		if i == maxListed {
			fmt.Fprintf(&b, "  ... and %d more\n", len(names)-maxListed)
			break
		}
		fmt.Fprintf(&b, "  %s\n", name)
	}
	b.WriteString("Their PersistentVolumeClaims hold the sandboxes' data. Say what to do with them:\n")
	if r.Name == "" {
		b.WriteString("  --sandboxes=keep    leave them, their PVCs and the CRDs (a later install takes them over)\n")
		b.WriteString("  --sandboxes=delete  delete them and their data while the controller still runs\n")
		return b.String()
	}
	ns := ""
	if r.Namespace != "" {
		ns = " -n " + r.Namespace
	}
	fmt.Fprintf(&b, "  keep them, their PVCs and the CRDs (a later install takes them over):\n")
	fmt.Fprintf(&b, "    helm uninstall %s%s --no-hooks\n", r.Name, ns)
	fmt.Fprintf(&b, "  or delete them and their data first, then uninstall (or set =keep the same way):\n")
	fmt.Fprintf(&b, "    helm rollback %s %d%s   # the refused uninstall left the release \"uninstalling\"; same revision, nothing changes\n", r.Name, r.Revision, ns)
	fmt.Fprintf(&b, "    helm upgrade %s CHART%s --reuse-values --set uninstall.sandboxes=delete\n", r.Name, ns)
	fmt.Fprintf(&b, "    helm uninstall %s%s\n", r.Name, ns)
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
