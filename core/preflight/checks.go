package preflight

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// Facts is what the checks decide from, gathered from the cluster
// (Gather) or written by hand in tests.
type Facts struct {
	// PreInstall: sandpod is not installed yet (--pre-install), so its
	// missing CRDs and service accounts are expected: they warn.
	PreInstall bool

	// ServerVersion is the API server's gitVersion (e.g. v1.37.2); empty
	// when it could not be read (ServerError says why).
	ServerVersion string
	ServerError   string

	// CRDs are sandpod's CustomResourceDefinitions by name.
	CRDs      map[string]CRD
	CRDsError string

	// Templates name RuntimeClasses and StorageClasses: name -> the
	// templates ("namespace/name") naming it. Extra RuntimeClasses to check
	// (--runtime-class) are named by "--runtime-class".
	RuntimeClassesNamed map[string][]string
	StorageClassesNamed map[string][]string
	TemplatesError      string

	RuntimeClasses map[string]RuntimeClass // those that exist
	Nodes          []Node
	NodesError     string

	StorageClasses  []StorageClass
	SnapshotAPI     bool // snapshot.storage.k8s.io is served
	SnapshotClasses []SnapshotClass

	// Access is one SubjectAccessReview per permission a component needs.
	Access []Access

	// Probes: nil when not run (--skip-probes).
	DNS    *DNSProbe
	NetPol *NetPolProbe

	// ExternalIPs is what a dry-run create of a Service with
	// spec.externalIPs got; nil when not tried.
	ExternalIPs *ExternalIPsProbe
}

// ExternalIPsProbe is the answer to a server-side dry run (nothing is
// stored) of a Service with spec.externalIPs.
type ExternalIPsProbe struct {
	Allowed bool
	// Refusal is the API server's answer when it refused; Error says why
	// the dry run could not be made (no permission, ...).
	Refusal, Error string
}

// CRD is one CustomResourceDefinition as found.
type CRD struct {
	Established bool
	Versions    []string // served versions
}

// RuntimeClass is one RuntimeClass as found.
type RuntimeClass struct {
	Handler      string
	NodeSelector map[string]string
}

// Node is what the checks need of a node.
type Node struct {
	Name   string
	Ready  bool
	Labels map[string]string
	// Handlers are the runtime handlers its kubelet reports
	// (status.runtimeHandlers); HandlersKnown is false when it reports none.
	Handlers      []string
	HandlersKnown bool
	// ContainerRuntime is status.nodeInfo.containerRuntimeVersion, e.g.
	// containerd://2.4.2.
	ContainerRuntime string
}

// StorageClass is one StorageClass as found.
type StorageClass struct {
	Name, Provisioner string
	Default           bool
}

// SnapshotClass is one VolumeSnapshotClass as found.
type SnapshotClass struct{ Name, Driver string }

// Access is the answer to one SubjectAccessReview: may Component's service
// account do Verb on Resource?
type Access struct {
	Component      string // controller, bridge
	ServiceAccount string // namespace/name
	SAMissing      bool   // the service account does not exist
	Verb, Resource string // Resource as resource.group, e.g. sandboxes.sandpod.dev
	Allowed        bool
	Error          string
}

// DNSProbe is what a pod saw resolving Name.
type DNSProbe struct {
	Name      string
	Want      string // the kubernetes Service's ClusterIP
	Addresses []string
	Error     string // the probe pod's complaint, or why it did not run
}

// NetPolProbe is what two probe pods saw: a client connecting to a server
// pod, before and after a NetworkPolicy denying ingress to the server.
type NetPolProbe struct {
	Error string // the probe could not run (pods not started, ...)
	// Open: the client connected before the policy.
	Open bool
	// Blocked: the client was refused after the policy (within the probe's
	// time); false means it still connected.
	Blocked bool
	Waited  string // how long the client tried after the policy
}

// minServer is the oldest Kubernetes sandpod supports (CEL rules in its
// CRDs); imageVolumeSince turns image volumes on by default.
var (
	minServer        = version.MustParseGeneric("1.30.0")
	imageVolumeSince = version.MustParseGeneric("1.35.0")
)

// WantCRDs are sandpod's CRDs and the version the controller serves: all
// of them, since the bridge and the controller watch every kind (the
// bridge does not start without the SandboxQuota and SandboxSnapshot
// CRDs). TestWantCRDsAreDeployed keeps the list in step with deploy/crd.
var WantCRDs = []string{
	"sandboxes.sandpod.dev", "sandboxtemplates.sandpod.dev",
	"sandboxwarmpools.sandpod.dev", "sandboxclaims.sandpod.dev",
	"sandboxquotas.sandpod.dev", "sandboxsnapshots.sandpod.dev",
}

const crdVersion = "v1alpha1"

// dependentRows are the rows after the API server's, as they are named when
// nothing could be gathered: every one of them asks the API server.
var dependentRows = []string{
	"CRDs", "RuntimeClasses", "StorageClasses", "VolumeSnapshotClasses", "image volumes (agent delivery)",
	"RBAC of the controller", "RBAC of the bridge", "cluster DNS", "NetworkPolicy enforced", "Service externalIPs",
}

// Check runs every decision over f, in the report's order. Without an API
// server the other rows are skipped, not judged from facts never gathered
// (which would read as missing CRDs and no classes).
func Check(f *Facts) Report {
	var r Report
	if f.ServerVersion == "" {
		r.Results = append(r.Results, CheckServer(f))
		for _, c := range dependentRows {
			r.Results = append(r.Results, Result{Check: c, Status: Skip, Detail: "skipped: API server unreachable"})
		}
		return r
	}
	r.Results = append(r.Results, CheckServer(f), CheckCRDs(f))
	r.Results = append(r.Results, CheckRuntimeClasses(f)...)
	r.Results = append(r.Results, CheckStorage(f), CheckSnapshots(f), CheckImageVolume(f))
	r.Results = append(r.Results, CheckAccess(f)...)
	r.Results = append(r.Results, CheckDNS(f), CheckNetworkPolicy(f), CheckExternalIPs(f))
	return r
}

// CheckServer: the API server answers and is new enough.
func CheckServer(f *Facts) Result {
	r := Result{Check: "API server"}
	if f.ServerVersion == "" {
		r.Status, r.Detail = Fail, "no version: "+f.ServerError
		r.Fix = "check the kubeconfig (--kubeconfig, $KUBECONFIG) and that the API server is reachable"
		return r
	}
	v, err := version.ParseGeneric(f.ServerVersion)
	if err != nil {
		r.Status, r.Detail = Warn, fmt.Sprintf("version %q not understood", f.ServerVersion)
		return r
	}
	if !v.AtLeast(minServer) {
		r.Status, r.Detail = Fail, fmt.Sprintf("%s; sandpod needs 1.30 or newer (CEL validation in its CRDs)", f.ServerVersion)
		r.Fix = "upgrade the cluster to Kubernetes 1.30 or newer"
		return r
	}
	r.Status, r.Detail = Pass, f.ServerVersion
	return r
}

// CheckCRDs: all of WantCRDs installed, established, serving v1alpha1.
func CheckCRDs(f *Facts) Result {
	r := Result{Check: "CRDs"}
	if f.CRDsError != "" {
		r.Status, r.Detail = Fail, "cannot list CustomResourceDefinitions: "+f.CRDsError
		r.Fix = "run preflight as a user who may list customresourcedefinitions"
		return r
	}
	var missing, notReady []string
	for _, name := range WantCRDs {
		c, ok := f.CRDs[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !c.Established || !contains(c.Versions, crdVersion):
			notReady = append(notReady, name)
		}
	}
	switch {
	case len(missing) == len(WantCRDs) && f.PreInstall:
		r.Status, r.Detail = Warn, "not installed yet (--pre-install)"
		r.Fix = "installing sandpod adds them: kubectl apply --server-side -f deploy/install.yaml (or helm install)"
	case len(missing) > 0:
		r.Status, r.Detail = Fail, "missing: "+strings.Join(missing, ", ")
		r.Fix = "install them: kubectl apply --server-side -f deploy/install.yaml (or helm install sandpod deploy/helm/sandpod)"
	case len(notReady) > 0:
		r.Status, r.Detail = Fail, "not established or not serving "+crdVersion+": "+strings.Join(notReady, ", ")
		r.Fix = "kubectl describe crd " + notReady[0] + " (its conditions say why); re-apply deploy/install.yaml"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("%d of %d established, serving %s", len(WantCRDs), len(WantCRDs), crdVersion)
	}
	return r
}

// CheckRuntimeClasses: one row per RuntimeClass the templates name; each
// must exist and have a ready node that can run it (its nodeSelector
// matches, and the node's runtime reports its handler when it reports
// handlers at all).
func CheckRuntimeClasses(f *Facts) []Result {
	if f.TemplatesError != "" {
		return []Result{{Check: "RuntimeClasses", Status: Warn, Detail: "cannot list SandboxTemplates: " + f.TemplatesError,
			Fix: "install the CRDs first; run preflight as a user who may list sandboxtemplates"}}
	}
	if len(f.RuntimeClassesNamed) == 0 {
		return []Result{{Check: "RuntimeClasses", Status: Warn,
			Detail: "no template names a RuntimeClass: sandboxes run under the nodes' default runtime (plain containers)",
			Fix:    "for untrusted code, install gVisor or Kata, create its RuntimeClass and name it in templates (runtimeClassName), or --runtime-class-policy=require|default on the controller"}}
	}
	var out []Result
	for _, name := range sortedKeys(f.RuntimeClassesNamed) {
		out = append(out, checkRuntimeClass(f, name, f.RuntimeClassesNamed[name]))
	}
	return out
}

func checkRuntimeClass(f *Facts, name string, by []string) Result {
	r := Result{Check: "RuntimeClass " + name}
	who := "named by " + strings.Join(by, ", ")
	rc, ok := f.RuntimeClasses[name]
	if !ok {
		r.Status, r.Detail = Fail, "not found ("+who+"): their sandboxes' pods are refused"
		r.Fix = "install the runtime on your nodes and create the RuntimeClass " + name + " (e.g. handler runsc for gVisor), or change the templates"
		return r
	}
	if f.NodesError != "" {
		r.Status, r.Detail = Warn, "exists (handler "+rc.Handler+"); cannot list nodes: "+f.NodesError
		return r
	}
	var selected, reported, running []string
	for _, n := range f.Nodes {
		if !n.Ready || !matches(rc.NodeSelector, n.Labels) {
			continue
		}
		selected = append(selected, n.Name)
		if n.HandlersKnown {
			reported = append(reported, n.Name)
			if contains(n.Handlers, rc.Handler) {
				running = append(running, n.Name)
			}
		}
	}
	switch {
	case len(selected) == 0:
		r.Status, r.Detail = Fail, fmt.Sprintf("handler %s, but no ready node matches its nodeSelector %v", rc.Handler, rc.NodeSelector)
		r.Fix = "label the nodes that have the runtime, or fix the RuntimeClass's scheduling.nodeSelector"
	case len(running) > 0:
		r.Status, r.Detail = Pass, fmt.Sprintf("handler %s on %d of %d ready nodes (%s)", rc.Handler, len(running), len(selected), who)
	case len(reported) == len(selected):
		r.Status, r.Detail = Fail, fmt.Sprintf("handler %s: no ready node's container runtime has it (%s)", rc.Handler, who)
		r.Fix = "configure the handler " + rc.Handler + " in the nodes' container runtime (containerd: a runtimes." + rc.Handler + " entry), or give the RuntimeClass a nodeSelector for the nodes that have it"
	default:
		r.Status, r.Detail = Warn, fmt.Sprintf("handler %s; %d ready nodes match, but their runtimes do not report handlers, so whether they have it is unknown (%s)", rc.Handler, len(selected), who)
		r.Fix = "create a sandbox of such a template and check it starts"
	}
	return r
}

// CheckStorage: the templates' StorageClasses exist; a default class
// exists for templates whose volumes name none.
func CheckStorage(f *Facts) Result {
	r := Result{Check: "StorageClasses"}
	have := map[string]bool{}
	var def []string
	for _, sc := range f.StorageClasses {
		have[sc.Name] = true
		if sc.Default {
			def = append(def, sc.Name)
		}
	}
	var missing []string
	for _, name := range sortedKeys(f.StorageClassesNamed) {
		if name != "" && !have[name] {
			missing = append(missing, fmt.Sprintf("%s (named by %s)", name, strings.Join(f.StorageClassesNamed[name], ", ")))
		}
	}
	_, needDefault := f.StorageClassesNamed[""]
	switch {
	case len(missing) > 0:
		r.Status, r.Detail = Fail, "missing: "+strings.Join(missing, "; ")
		r.Fix = "create the StorageClass, or change the templates' volumeClaimTemplates"
	case len(def) == 0 && needDefault:
		r.Status, r.Detail = Fail, "no default StorageClass, and templates ("+strings.Join(f.StorageClassesNamed[""], ", ")+") have volumes that name none: their PVCs stay Pending"
		r.Fix = "mark a StorageClass default (annotation storageclass.kubernetes.io/is-default-class=true) or name one in the templates"
	case len(def) == 0:
		r.Status, r.Detail = Warn, fmt.Sprintf("%d classes, none default: sandboxes with storage must name one", len(f.StorageClasses))
		r.Fix = "mark a StorageClass default (annotation storageclass.kubernetes.io/is-default-class=true)"
	case len(def) > 1:
		r.Status, r.Detail = Warn, "more than one default: "+strings.Join(def, ", ")
		r.Fix = "keep one default StorageClass"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("default %s; %d classes", def[0], len(f.StorageClasses))
	}
	return r
}

// CheckSnapshots: CSI volume snapshots, for SandboxSnapshots (snapshots,
// forks and restores on Kubernetes). Only those need them, so their
// absence warns. A snapshot of a sandbox's volume needs a VolumeSnapshotClass
// whose driver is the provisioner of the volume's StorageClass: each class
// the templates name (a volume naming none gets the default) and the
// default class are looked at.
func CheckSnapshots(f *Facts) Result {
	r := Result{Check: "VolumeSnapshotClasses"}
	if !f.SnapshotAPI {
		r.Status, r.Detail = Warn, "snapshot.storage.k8s.io is not served: no CSI snapshots of sandbox volumes"
		r.Fix = "install the CSI external-snapshotter CRDs and controller, and a VolumeSnapshotClass for your CSI driver (needed only for volume snapshots)"
		return r
	}
	if len(f.SnapshotClasses) == 0 {
		r.Status, r.Detail = Warn, "snapshot API served, but no VolumeSnapshotClass"
		r.Fix = "create a VolumeSnapshotClass for your CSI driver"
		return r
	}
	drivers := map[string]bool{}
	for _, c := range f.SnapshotClasses {
		drivers[c.Driver] = true
	}
	var uncovered, fixDrivers, covered []string
	for _, sc := range snapshotRelevant(f) {
		covered = append(covered, sc.Name)
		if drivers[sc.Provisioner] {
			continue
		}
		uncovered = append(uncovered, fmt.Sprintf("%s (provisioner %s, %s)", sc.Name, sc.Provisioner, sc.why))
		// In-tree provisioners (kubernetes.io/...) are no CSI drivers: no
		// VolumeSnapshotClass can name them.
		if !strings.HasPrefix(sc.Provisioner, "kubernetes.io/") && !contains(fixDrivers, sc.Provisioner) {
			fixDrivers = append(fixDrivers, sc.Provisioner)
		}
	}
	switch {
	case len(uncovered) > 0:
		r.Status, r.Detail = Warn, fmt.Sprintf("%d classes, none for StorageClass %s: its volumes cannot be snapshotted", len(f.SnapshotClasses), strings.Join(uncovered, "; "))
		r.Fix = "name a CSI StorageClass that has a VolumeSnapshotClass in the templates whose sandboxes need snapshots"
		if len(fixDrivers) > 0 {
			r.Fix = "create a VolumeSnapshotClass with driver " + strings.Join(fixDrivers, ", ") + " (needed only for snapshots of those volumes), or " + r.Fix
		}
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("%d classes, covering StorageClasses %s", len(f.SnapshotClasses), strings.Join(covered, ", "))
	}
	return r
}

// relevantClass is a StorageClass whose volumes may be snapshotted, and why
// it is looked at.
type relevantClass struct {
	StorageClass
	why string
}

// snapshotRelevant: the StorageClasses the templates name (those that exist:
// CheckStorage reports the others), and the default class (for templates
// whose volumes name none, and for sandboxes made without a template), in
// name order.
func snapshotRelevant(f *Facts) []relevantClass {
	var out []relevantClass
	for _, sc := range f.StorageClasses {
		var why []string
		if by := f.StorageClassesNamed[sc.Name]; len(by) > 0 {
			why = append(why, "named by "+strings.Join(by, ", "))
		}
		if sc.Default {
			if by := f.StorageClassesNamed[""]; len(by) > 0 {
				why = append(why, "the default, for "+strings.Join(by, ", "))
			} else {
				why = append(why, "the default")
			}
		}
		if len(why) > 0 {
			out = append(out, relevantClass{sc, strings.Join(why, "; ")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CheckImageVolume: whether the agent can be delivered as an image volume
// (no init container). The controller's --agent-delivery=auto picks image
// volumes on 1.35+ API servers, so a node runtime without them fails then.
func CheckImageVolume(f *Facts) Result {
	r := Result{Check: "image volumes (agent delivery)"}
	v, err := version.ParseGeneric(f.ServerVersion)
	if err != nil {
		r.Status, r.Detail = Warn, "API server version unknown"
		return r
	}
	if !v.AtLeast(imageVolumeSince) {
		r.Status, r.Detail = Pass, f.ServerVersion+" has no image volumes by default: the agent comes in an init container (--agent-delivery=auto)"
		return r
	}
	var old []string
	for _, n := range f.Nodes {
		if n.Ready && !runtimeHasImageVolumes(n.ContainerRuntime) {
			old = append(old, n.Name+" ("+n.ContainerRuntime+")")
		}
	}
	if len(old) > 0 {
		r.Status, r.Detail = Fail, "image volumes are on by default, but these nodes' runtimes lack them: "+strings.Join(old, ", ")
		r.Fix = "upgrade them to containerd 2.1+ or CRI-O 1.31+, or run the controller with --agent-delivery=init-container"
		return r
	}
	r.Status, r.Detail = Pass, "on by default in "+f.ServerVersion+", and every ready node's runtime has them"
	return r
}

// runtimeHasImageVolumes: containerd 2.1+ and CRI-O 1.31+ mount image
// volumes; other runtimes are not known to.
func runtimeHasImageVolumes(rt string) bool {
	name, ver, ok := strings.Cut(rt, "://")
	if !ok {
		return false
	}
	v, err := version.ParseGeneric(ver)
	if err != nil {
		return false
	}
	switch name {
	case "containerd":
		return v.AtLeast(version.MustParseGeneric("2.1.0"))
	case "cri-o":
		return v.AtLeast(version.MustParseGeneric("1.31.0"))
	}
	return false
}

// CheckAccess: one row per component, pass when its service account may do
// all it needs.
func CheckAccess(f *Facts) []Result {
	var order []string
	by := map[string][]Access{}
	for _, a := range f.Access {
		if _, ok := by[a.Component]; !ok {
			order = append(order, a.Component)
		}
		by[a.Component] = append(by[a.Component], a)
	}
	var out []Result
	for _, c := range order {
		out = append(out, checkAccess(f, c, by[c]))
	}
	return out
}

func checkAccess(f *Facts, component string, as []Access) Result {
	r := Result{Check: "RBAC of the " + component}
	sa := as[0].ServiceAccount
	if as[0].SAMissing && f.PreInstall {
		r.Status, r.Detail = Warn, "service account "+sa+" not installed yet (--pre-install)"
		r.Fix = "installing sandpod adds it with its RBAC"
		return r
	}
	if as[0].SAMissing {
		r.Status, r.Detail = Fail, "service account "+sa+" not found"
		r.Fix = "install sandpod (deploy/install.yaml or the Helm chart), or give preflight the namespace it is in (--system-namespace)"
		return r
	}
	var denied, errs []string
	for _, a := range as {
		switch {
		case a.Error != "":
			errs = append(errs, a.Verb+" "+a.Resource+": "+a.Error)
		case !a.Allowed:
			denied = append(denied, a.Verb+" "+a.Resource)
		}
	}
	switch {
	case len(denied) > 0:
		r.Status, r.Detail = Fail, sa+" may not: "+strings.Join(denied, ", ")
		r.Fix = "re-apply the ClusterRole and binding of the " + component + " from deploy/install.yaml (or the chart)"
	case len(errs) > 0:
		r.Status, r.Detail = Warn, "cannot ask: "+strings.Join(errs, "; ")
		r.Fix = "run preflight as a user who may create subjectaccessreviews"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("%s may do all %d things it needs", sa, len(as))
	}
	return r
}

// CheckDNS: a pod resolves kubernetes.default.svc.<domain> to the
// kubernetes Service.
func CheckDNS(f *Facts) Result {
	r := Result{Check: "cluster DNS"}
	p := f.DNS
	switch {
	case p == nil:
		r.Status, r.Detail = Warn, "not probed (--skip-probes)"
	case p.Error != "" && len(p.Addresses) == 0:
		r.Status, r.Detail = Fail, fmt.Sprintf("a pod could not resolve %s: %s", p.Name, p.Error)
		r.Fix = "check the cluster DNS (kubectl -n kube-system get pods -l k8s-app=kube-dns) and that --cluster-domain is the kubelets' clusterDomain; sandboxes' stable names (service: true) need it"
	case p.Want != "" && !contains(p.Addresses, p.Want):
		r.Status, r.Detail = Fail, fmt.Sprintf("%s resolved to %v, not the kubernetes Service's %s", p.Name, p.Addresses, p.Want)
		r.Fix = "check that --cluster-domain is the kubelets' clusterDomain and that the DNS server serves it"
	default:
		r.Status, r.Detail = Pass, fmt.Sprintf("a pod resolved %s to %s", p.Name, strings.Join(p.Addresses, ", "))
	}
	return r
}

// CheckNetworkPolicy: a NetworkPolicy denying ingress stops a connection
// that worked without it. Not enforced is a failure: sandboxes run
// untrusted code, and their managed NetworkPolicy is what keeps them from
// the API server, other sandboxes and the cloud metadata address.
func CheckNetworkPolicy(f *Facts) Result {
	r := Result{Check: "NetworkPolicy enforced"}
	p := f.NetPol
	switch {
	case p == nil:
		r.Status, r.Detail = Warn, "not probed (--skip-probes)"
	case p.Error != "":
		r.Status, r.Detail = Warn, "probe did not run: "+p.Error
		r.Fix = "check that pods can start in the probe namespace (image, quotas, admission), then run preflight again"
	case !p.Open:
		r.Status, r.Detail = Warn, "inconclusive: the probe client could not reach the probe server even without a policy"
		r.Fix = "check pod-to-pod networking, and any default-deny policy in the probe namespace"
	case !p.Blocked:
		r.Status, r.Detail = Fail, "not enforced: a policy denying ingress let the probe client in for "+p.Waited
		r.Fix = "use a CNI plugin that enforces NetworkPolicy (Calico, Cilium, kube-network-policies, ...); without one a sandbox reaches the API server, other sandboxes and the cloud metadata address"
	default:
		r.Status, r.Detail = Pass, "a policy denying ingress blocked the probe client"
	}
	return r
}

// CheckExternalIPs: whoever may create a Service with spec.externalIPs can
// take the cluster's traffic to any address, another pod's IP included
// (CVE-2020-8554: kube-proxy sends it to their pods). A warning, not a
// failure: it is the cluster's policy, and the bridge authenticates each
// agent, so a taken pod IP gets nothing from it; but sandbox namespaces'
// users should not have it.
func CheckExternalIPs(f *Facts) Result {
	r := Result{Check: "Service externalIPs"}
	p := f.ExternalIPs
	switch {
	case p == nil:
		r.Status, r.Detail = Warn, "not checked"
	case p.Error != "":
		r.Status, r.Detail = Warn, "not checked: a dry-run create of a Service failed: "+p.Error
		r.Fix = "run preflight as someone who may create Services, or check the admission configuration by hand"
	case p.Allowed:
		r.Status, r.Detail = Warn, "a Service may set spec.externalIPs (a dry-run create was accepted): whoever may create Services can take traffic for any address, a pod's included (CVE-2020-8554)"
		r.Fix = "enable the DenyServiceExternalIPs admission plugin (kube-apiserver --enable-admission-plugins=...,DenyServiceExternalIPs) or a ValidatingAdmissionPolicy that refuses spec.externalIPs, and let no tenant patch services/status"
	default:
		r.Status, r.Detail = Pass, "a Service with spec.externalIPs is refused: "+p.Refusal
	}
	return r
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
