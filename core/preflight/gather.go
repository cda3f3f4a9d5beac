package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/scheme"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// Options say what to check and how.
type Options struct {
	// PreInstall: sandpod is not installed yet (Facts.PreInstall).
	PreInstall bool
	// SystemNamespace is where sandpod runs (its service accounts).
	SystemNamespace string
	// ControllerSA and BridgeSA name their service accounts.
	ControllerSA, BridgeSA string
	// ClusterDomain is the kubelets' clusterDomain.
	ClusterDomain string
	// RuntimeClasses are checked besides those the templates name.
	RuntimeClasses []string
	// SkipProbes leaves out the probe pods (DNS, NetworkPolicy).
	SkipProbes bool
	// Probe configures the probe pods.
	Probe ProbeOptions
}

// Gather collects the facts of the cluster at cfg. What cannot be read is
// recorded in the facts (the checks turn it into warnings or failures); the
// error is for a cluster that does not answer at all.
func Gather(ctx context.Context, cfg *rest.Config, o Options) (*Facts, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sch, err := scheme.New()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		return nil, err
	}
	f := &Facts{PreInstall: o.PreInstall}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		f.ServerError = err.Error()
		return f, fmt.Errorf("API server: %w", err)
	}
	f.ServerVersion = v.GitVersion

	gatherCRDs(ctx, dyn, f)
	gatherTemplates(ctx, cl, f, o.RuntimeClasses)
	gatherNodes(ctx, cs, f)
	gatherStorage(ctx, cs, dyn, f)
	f.Access = gatherAccess(ctx, cs, o)
	f.ExternalIPs = probeExternalIPs(ctx, cs, o.Probe.Namespace)
	if !o.SkipProbes {
		f.DNS, f.NetPol = runProbes(ctx, cs, o)
	}
	return f, nil
}

var (
	crdGVR           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	snapshotClassGVR = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"}
)

func gatherCRDs(ctx context.Context, dyn dynamic.Interface, f *Facts) {
	f.CRDs = map[string]CRD{}
	for _, name := range WantCRDs {
		u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			f.CRDsError = err.Error()
			return
		}
		var c CRD
		conds, _, _ := unstructuredSlice(u.Object, "status", "conditions")
		for _, x := range conds {
			m, _ := x.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				c.Established = true
			}
		}
		vers, _, _ := unstructuredSlice(u.Object, "spec", "versions")
		for _, x := range vers {
			m, _ := x.(map[string]any)
			if served, _ := m["served"].(bool); served {
				name, _ := m["name"].(string)
				c.Versions = append(c.Versions, name)
			}
		}
		f.CRDs[name] = c
	}
}

func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

func gatherTemplates(ctx context.Context, cl client.Client, f *Facts, extra []string) {
	f.RuntimeClassesNamed = map[string][]string{}
	f.StorageClassesNamed = map[string][]string{}
	for _, rc := range extra {
		f.RuntimeClassesNamed[rc] = append(f.RuntimeClassesNamed[rc], "--runtime-class")
	}
	var list v1alpha1.SandboxTemplateList
	if err := cl.List(ctx, &list); err != nil {
		f.TemplatesError = err.Error()
		return
	}
	for _, t := range list.Items {
		who := t.Namespace + "/" + t.Name
		rc := t.Spec.PodTemplate.Spec.RuntimeClassName
		if t.Spec.RuntimeClassName != nil {
			rc = t.Spec.RuntimeClassName
		}
		if rc != nil && *rc != "" {
			f.RuntimeClassesNamed[*rc] = append(f.RuntimeClassesNamed[*rc], who)
		}
		for _, v := range t.Spec.VolumeClaimTemplates {
			sc := v.Spec.StorageClassName
			switch {
			case sc == nil:
				f.StorageClassesNamed[""] = appendOnce(f.StorageClassesNamed[""], who)
			case *sc != "": // "" asks for no class (a pre-bound PV)
				f.StorageClassesNamed[*sc] = appendOnce(f.StorageClassesNamed[*sc], who)
			}
		}
	}
}

func appendOnce(xs []string, x string) []string {
	if contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

func gatherNodes(ctx context.Context, cs kubernetes.Interface, f *Facts) {
	f.RuntimeClasses = map[string]RuntimeClass{}
	rcs, err := cs.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, rc := range rcs.Items {
			x := RuntimeClass{Handler: rc.Handler}
			if rc.Scheduling != nil {
				x.NodeSelector = rc.Scheduling.NodeSelector
			}
			f.RuntimeClasses[rc.Name] = x
		}
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.NodesError = err.Error()
		return
	}
	for _, n := range nodes.Items {
		x := Node{Name: n.Name, Labels: n.Labels, ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				x.Ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, h := range n.Status.RuntimeHandlers {
			x.HandlersKnown = true
			x.Handlers = append(x.Handlers, h.Name)
		}
		f.Nodes = append(f.Nodes, x)
	}
}

func gatherStorage(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, f *Facts) {
	scs, err := cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, sc := range scs.Items {
			def := sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true"
			f.StorageClasses = append(f.StorageClasses, StorageClass{Name: sc.Name, Provisioner: sc.Provisioner, Default: def})
		}
	}
	list, err := dyn.Resource(snapshotClassGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // not served (or not allowed): SnapshotAPI stays false
	}
	f.SnapshotAPI = true
	for _, u := range list.Items {
		driver, _ := u.Object["driver"].(string)
		f.SnapshotClasses = append(f.SnapshotClasses, SnapshotClass{Name: u.GetName(), Driver: driver})
	}
}

// Need is one permission a component's service account must have.
type Need struct {
	Verb, Group, Resource, Subresource string
	// Namespace: "" for every namespace (a ClusterRole), "system" for
	// sandpod's own namespace, else that namespace.
	Namespace string
	// Name: one object only (a rule's resourceNames), e.g. the
	// kubernetes EndpointSlice.
	Name string
}

func (n Need) String() string {
	r := n.Resource
	if n.Subresource != "" {
		r += "/" + n.Subresource
	}
	if n.Group != "" {
		r += "." + n.Group
	}
	if n.Name != "" {
		r += " " + n.Namespace + "/" + n.Name
	}
	return n.Verb + " " + r
}

// needs returns the permissions of one resource for several verbs.
func needs(group, resource, sub string, verbs ...string) []Need {
	out := make([]Need, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, Need{Verb: v, Group: group, Resource: resource, Subresource: sub})
	}
	return out
}

func join(parts ...[]Need) []Need {
	var out []Need
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ControllerNeeds and BridgeNeeds are what their service accounts must be
// allowed (deploy/rbac/role.yaml and deploy/base; a test checks they
// agree).
var (
	ControllerNeeds = join(
		needs("sandpod.dev", "sandboxes", "", "get", "list", "watch", "create", "patch", "delete"),
		needs("sandpod.dev", "sandboxes", "status", "patch"),
		needs("sandpod.dev", "sandboxes", "finalizers", "update"),
		needs("sandpod.dev", "sandboxtemplates", "", "get", "list", "watch"),
		needs("sandpod.dev", "sandboxwarmpools", "", "get", "list", "watch"),
		needs("sandpod.dev", "sandboxclaims", "", "get", "list", "watch", "delete"),
		needs("sandpod.dev", "sandboxclaims", "status", "patch"),
		needs("sandpod.dev", "sandboxquotas", "", "get", "list", "watch"),
		needs("sandpod.dev", "sandboxsnapshots", "", "get", "list", "watch", "patch"),
		needs("sandpod.dev", "sandboxsnapshots", "status", "patch"),
		needs("sandpod.dev", "sandboxsnapshots", "finalizers", "update"),
		needs("snapshot.storage.k8s.io", "volumesnapshots", "", "get", "create", "delete"),
		needs("snapshot.storage.k8s.io", "volumesnapshotcontents", "", "get"),
		needs("", "pods", "", "get", "list", "watch", "create", "delete"),
		needs("", "services", "", "create", "delete"),
		needs("", "persistentvolumeclaims", "", "create", "delete"),
		// The agents' bridge CA, in sandpod's namespace only (a Role): the
		// controller has no Secret rights in the sandboxes' namespaces.
		[]Need{{Verb: "get", Resource: "secrets", Namespace: "system", Name: "sandpod-agent-ca"}},
		[]Need{{Verb: "create", Resource: "secrets", Namespace: "system"}},
		needs("", "events", "", "create"),
		// The events the controller records (client-go's events API).
		needs("events.k8s.io", "events", "", "create"),
		// The API server's addresses, for the sandboxes' NetworkPolicy
		// (core/controller/template): this one EndpointSlice only.
		[]Need{{Verb: "get", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Name: "kubernetes"}},
		needs("networking.k8s.io", "networkpolicies", "", "get", "list", "watch", "create", "update", "delete"),
		[]Need{{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "system"}},
	)
	BridgeNeeds = join(
		needs("sandpod.dev", "sandboxes", "", "get", "list", "watch", "create", "patch", "delete"),
		needs("sandpod.dev", "sandboxes", "status", "patch"),
		needs("sandpod.dev", "sandboxclaims", "", "delete"),
		needs("sandpod.dev", "sandboxtemplates", "", "get", "list", "watch"),
		needs("sandpod.dev", "sandboxwarmpools", "", "get", "list", "watch", "patch"),
		needs("sandpod.dev", "sandboxquotas", "", "get", "list", "watch"),
		needs("sandpod.dev", "sandboxsnapshots", "", "get", "list", "watch", "create", "delete"),
		[]Need{{Verb: "get", Resource: "secrets", Namespace: "system", Name: "sandpod-agent-ca"}},
		// No Secret besides the CA: the agent Secrets of pods an earlier
		// controller made are read only with --legacy-agent-secrets and a
		// rule of its own (docs/install.md), not asked for here.
		// --token-review, and every agent's identity token.
		needs("authentication.k8s.io", "tokenreviews", "", "create"),
		needs("authorization.k8s.io", "subjectaccessreviews", "", "create"),
	)
)

// gatherAccess asks, with SubjectAccessReviews, whether each component's
// service account may do what it needs.
func gatherAccess(ctx context.Context, cs kubernetes.Interface, o Options) []Access {
	var out []Access
	for _, c := range []struct {
		component, sa string
		needs         []Need
	}{{"controller", o.ControllerSA, ControllerNeeds}, {"bridge", o.BridgeSA, BridgeNeeds}} {
		sa := o.SystemNamespace + "/" + c.sa
		_, err := cs.CoreV1().ServiceAccounts(o.SystemNamespace).Get(ctx, c.sa, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = append(out, Access{Component: c.component, ServiceAccount: sa, SAMissing: true})
			continue
		}
		user := "system:serviceaccount:" + o.SystemNamespace + ":" + c.sa
		groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + o.SystemNamespace, "system:authenticated"}
		for _, n := range c.needs {
			ns := n.Namespace
			if ns == "system" {
				ns = o.SystemNamespace
			}
			a := Access{Component: c.component, ServiceAccount: sa, Verb: n.Verb, Resource: strings.TrimPrefix(n.String(), n.Verb+" ")}
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: n.Verb, Group: n.Group, Resource: n.Resource, Subresource: n.Subresource, Name: n.Name,
				},
			}}
			res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				a.Error = err.Error()
			} else {
				a.Allowed = res.Status.Allowed
			}
			out = append(out, a)
		}
	}
	return out
}

// mayCreate asks with a SelfSubjectAccessReview whether the caller may
// create resource (group "") in namespace ns.
func mayCreate(ctx context.Context, cs kubernetes.Interface, ns, group, resource string) (bool, error) {
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "create", Group: group, Resource: resource,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// since formats how long ago t was, rounded for people.
// probeExternalIPs asks the API server, in a dry run that stores nothing,
// whether a Service may set spec.externalIPs (an address of the
// documentation range, RFC 5737).
func probeExternalIPs(ctx context.Context, cs kubernetes.Interface, ns string) *ExternalIPsProbe {
	if ns == "" {
		ns = "default"
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sandpod-preflight-externalips-"},
		Spec: corev1.ServiceSpec{
			ExternalIPs: []string{"192.0.2.1"},
			Ports:       []corev1.ServicePort{{Port: 7070}},
		},
	}
	_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return &ExternalIPsProbe{Allowed: true}
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot create resource"):
		return &ExternalIPsProbe{Error: err.Error()} // RBAC: preflight's own user may not
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// DenyServiceExternalIPs answers Forbidden, a ValidatingAdmissionPolicy
		// Invalid (the Service is valid otherwise).
		return &ExternalIPsProbe{Refusal: err.Error()}
	default:
		return &ExternalIPsProbe{Error: err.Error()}
	}
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
