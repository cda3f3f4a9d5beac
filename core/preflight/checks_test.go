package preflight

import (
	"bytes"
	"strings"
	"testing"
)

// complete is a cluster where every check passes.
func complete() *Facts {
	crds := map[string]CRD{}
	for _, n := range WantCRDs {
		crds[n] = CRD{Established: true, Versions: []string{"v1alpha1"}}
	}
	return &Facts{
		ServerVersion:       "v1.37.2",
		CRDs:                crds,
		RuntimeClassesNamed: map[string][]string{"gvisor": {"team/python"}},
		StorageClassesNamed: map[string][]string{"": {"team/python"}},
		RuntimeClasses:      map[string]RuntimeClass{"gvisor": {Handler: "runsc"}},
		Nodes: []Node{{Name: "n1", Ready: true, Handlers: []string{"", "runc", "runsc"}, HandlersKnown: true,
			ContainerRuntime: "containerd://2.4.2"}},
		StorageClasses:  []StorageClass{{Name: "std", Provisioner: "csi.example", Default: true}},
		SnapshotAPI:     true,
		SnapshotClasses: []SnapshotClass{{Name: "snap", Driver: "csi.example"}},
		Access: []Access{
			{Component: "controller", ServiceAccount: "sandpod-system/sandpod-controller", Verb: "create", Resource: "pods", Allowed: true},
			{Component: "bridge", ServiceAccount: "sandpod-system/sandpod-bridge", Verb: "get", Resource: "secrets", Allowed: true},
		},
		DNS:         &DNSProbe{Name: "kubernetes.default.svc.cluster.local.", Want: "10.0.0.1", Addresses: []string{"10.0.0.1"}},
		NetPol:      &NetPolProbe{Open: true, Blocked: true, Waited: "1.2s"},
		ExternalIPs: &ExternalIPsProbe{Refusal: "use of external IPs is denied by admission control"},
	}
}

func row(t *testing.T, r Report, check string) Result {
	t.Helper()
	for _, x := range r.Results {
		if x.Check == check {
			return x
		}
	}
	t.Fatalf("no row %q in %+v", check, r.Results)
	return Result{}
}

func TestCheckComplete(t *testing.T) {
	r := Check(complete())
	for _, x := range r.Results {
		if x.Status != Pass {
			t.Errorf("%s: %s %s", x.Check, x.Status, x.Detail)
		}
	}
	if r.Failed(true) {
		t.Error("a complete cluster failed")
	}
	if len(r.Results) != 11 {
		t.Errorf("%d rows, want 11: %+v", len(r.Results), r.Results)
	}
}

// Each case takes one piece away (or breaks it) and names the row that must
// say so, its status, and a word of its detail.
func TestCheckPieceMissing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Facts)
		check  string
		want   Status
		detail string
	}{
		{"old server", func(f *Facts) { f.ServerVersion = "v1.29.4" }, "API server", Fail, "1.30"},
		{"no server", func(f *Facts) { f.ServerVersion, f.ServerError = "", "connection refused" }, "API server", Fail, "refused"},
		{"a CRD missing", func(f *Facts) { delete(f.CRDs, "sandboxclaims.sandpod.dev") }, "CRDs", Fail, "sandboxclaims.sandpod.dev"},
		{"a CRD not established", func(f *Facts) { f.CRDs["sandboxes.sandpod.dev"] = CRD{Versions: []string{"v1alpha1"}} }, "CRDs", Fail, "not established"},
		{"no RuntimeClass", func(f *Facts) { f.RuntimeClasses = nil }, "RuntimeClass gvisor", Fail, "not found (named by team/python)"},
		{"no node has the handler", func(f *Facts) { f.Nodes[0].Handlers = []string{"runc"} }, "RuntimeClass gvisor", Fail, "no ready node's container runtime"},
		{"handlers not reported", func(f *Facts) { f.Nodes[0].Handlers, f.Nodes[0].HandlersKnown = nil, false }, "RuntimeClass gvisor", Warn, "unknown"},
		{"nodeSelector matches no node", func(f *Facts) {
			f.RuntimeClasses["gvisor"] = RuntimeClass{Handler: "runsc", NodeSelector: map[string]string{"gvisor": "yes"}}
		}, "RuntimeClass gvisor", Fail, "nodeSelector"},
		{"node not ready", func(f *Facts) { f.Nodes[0].Ready = false }, "RuntimeClass gvisor", Fail, "no ready node"},
		{"no template names one", func(f *Facts) { f.RuntimeClassesNamed = nil }, "RuntimeClasses", Warn, "no template"},
		{"no default class, templates need one", func(f *Facts) { f.StorageClasses[0].Default = false }, "StorageClasses", Fail, "no default"},
		{"no default class, none needed", func(f *Facts) { f.StorageClasses[0].Default = false; f.StorageClassesNamed = nil }, "StorageClasses", Warn, "none default"},
		{"named class missing", func(f *Facts) { f.StorageClassesNamed["fast"] = []string{"team/db"} }, "StorageClasses", Fail, "fast (named by team/db)"},
		{"no snapshot API", func(f *Facts) { f.SnapshotAPI, f.SnapshotClasses = false, nil }, "VolumeSnapshotClasses", Warn, "not served"},
		{"no snapshot class for the driver", func(f *Facts) { f.SnapshotClasses[0].Driver = "other" }, "VolumeSnapshotClasses", Warn, "csi.example"},
		{"old containerd on 1.35+", func(f *Facts) { f.Nodes[0].ContainerRuntime = "containerd://1.7.20" }, "image volumes (agent delivery)", Fail, "n1 (containerd://1.7.20)"},
		{"docker shim", func(f *Facts) { f.Nodes[0].ContainerRuntime = "docker://27.0.1" }, "image volumes (agent delivery)", Fail, "docker"},
		{"RBAC denied", func(f *Facts) { f.Access[0].Allowed = false }, "RBAC of the controller", Fail, "may not: create pods"},
		{"service account missing", func(f *Facts) { f.Access[1] = Access{Component: "bridge", ServiceAccount: "x/y", SAMissing: true} }, "RBAC of the bridge", Fail, "x/y not found"},
		{"cannot ask", func(f *Facts) { f.Access[1].Allowed, f.Access[1].Error = false, "forbidden" }, "RBAC of the bridge", Warn, "forbidden"},
		{"DNS fails", func(f *Facts) { f.DNS.Addresses, f.DNS.Error = nil, "no such host" }, "cluster DNS", Fail, "no such host"},
		{"DNS wrong answer", func(f *Facts) { f.DNS.Addresses = []string{"1.2.3.4"} }, "cluster DNS", Fail, "not the kubernetes Service"},
		{"DNS not probed", func(f *Facts) { f.DNS = nil }, "cluster DNS", Warn, "skip-probes"},
		{"policy not enforced", func(f *Facts) { f.NetPol.Blocked, f.NetPol.Waited = false, "20s" }, "NetworkPolicy enforced", Fail, "not enforced"},
		{"probe pods cannot talk", func(f *Facts) { f.NetPol.Open, f.NetPol.Blocked = false, false }, "NetworkPolicy enforced", Warn, "inconclusive"},
		{"probe did not run", func(f *Facts) { f.NetPol.Error = "ImagePullBackOff" }, "NetworkPolicy enforced", Warn, "ImagePullBackOff"},
		{"externalIPs allowed", func(f *Facts) { f.ExternalIPs = &ExternalIPsProbe{Allowed: true} }, "Service externalIPs", Warn, "CVE-2020-8554"},
		{"externalIPs not checked", func(f *Facts) { f.ExternalIPs = &ExternalIPsProbe{Error: "forbidden"} }, "Service externalIPs", Warn, "not checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := complete()
			tc.change(f)
			r := Check(f)
			got := row(t, r, tc.check)
			if got.Status != tc.want || !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("%s = %s %q, want %s with %q", tc.check, got.Status, got.Detail, tc.want, tc.detail)
			}
			if got.Status != Pass && got.Fix == "" && tc.want == Fail {
				t.Errorf("%s fails without saying what to do", tc.check)
			}
			if r.Failed(false) != (tc.want == Fail) {
				t.Errorf("Failed() = %v with a %s row", r.Failed(false), tc.want)
			}
			if !r.Failed(true) {
				t.Errorf("strict: Failed() = false with a %s row", tc.want)
			}
			for _, x := range r.Results {
				if x.Check != tc.check && x.Status != Pass && !(tc.check == "API server" || tc.name == "no RuntimeClass") {
					t.Errorf("another row changed: %s %s %s", x.Check, x.Status, x.Detail)
				}
			}
		})
	}
}

func TestRuntimeHasImageVolumes(t *testing.T) {
	for rt, want := range map[string]bool{
		"containerd://2.4.2": true, "containerd://2.1.0": true, "containerd://2.0.5": false,
		"containerd://v2.2.0-rc.1": true, "cri-o://1.31.2": true, "cri-o://1.30.0": false,
		"docker://27.0.0": false, "containerd://2.4.2+unknown": true, "": false,
	} {
		if got := runtimeHasImageVolumes(rt); got != want {
			t.Errorf("runtimeHasImageVolumes(%q) = %v, want %v", rt, got, want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	f := complete()
	f.RuntimeClasses = nil
	var b bytes.Buffer
	if err := Check(f).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"CHECK", "RuntimeClass gvisor", "FAIL", "-> install the runtime", "10 passed, 0 warned, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Before an install (--pre-install), sandpod's own pieces missing warn;
// broken ones still fail.
func TestCheckPreInstall(t *testing.T) {
	f := complete()
	f.PreInstall = true
	f.CRDs = map[string]CRD{}
	f.Access = []Access{{Component: "controller", ServiceAccount: "sandpod-system/sandpod-controller", SAMissing: true}}
	r := Check(f)
	for _, c := range []string{"CRDs", "RBAC of the controller"} {
		if got := row(t, r, c); got.Status != Warn || !strings.Contains(got.Detail, "not installed yet") {
			t.Errorf("%s before install: %s %q, want a warning", c, got.Status, got.Detail)
		}
	}
	if r.Failed(false) {
		t.Errorf("a cluster ready for an install failed: %+v", r.Results)
	}
	f.CRDs = map[string]CRD{"sandboxes.sandpod.dev": {Established: true, Versions: []string{"v1alpha1"}}}
	if got := row(t, Check(f), "CRDs"); got.Status != Fail {
		t.Errorf("some CRDs there, others not, before install: %s, want fail", got.Status)
	}
}

// Without an API server nothing else could be gathered: every other row
// says it was skipped (not "missing" CRDs, "0 classes" or probes "not
// probed (--skip-probes)"), and the run fails on the API server row.
func TestCheckServerUnreachable(t *testing.T) {
	f := &Facts{ServerError: "dial tcp 10.0.0.1:6443: connect: connection refused"}
	r := Check(f)
	if len(r.Results) != 11 {
		t.Errorf("%d rows, want 11 (the same rows as a complete run): %+v", len(r.Results), r.Results)
	}
	if got := row(t, r, "API server"); got.Status != Fail || !strings.Contains(got.Detail, "refused") {
		t.Errorf("API server: %s %q, want fail naming the error", got.Status, got.Detail)
	}
	for _, x := range r.Results[1:] {
		if x.Status != Skip || x.Detail != "skipped: API server unreachable" {
			t.Errorf("%s: %s %q, want skip: API server unreachable", x.Check, x.Status, x.Detail)
		}
	}
	for _, c := range []string{"CRDs", "StorageClasses", "RBAC of the controller", "RBAC of the bridge", "NetworkPolicy enforced"} {
		row(t, r, c)
	}
	if !r.Failed(false) {
		t.Error("an unreachable API server did not fail the run")
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0 passed, 0 warned, 1 failed, 10 skipped") {
		t.Errorf("summary:\n%s", b.String())
	}
}

// The snapshot row looks at every StorageClass the templates use (those
// they name, and the default for volumes that name none), not only the
// default's provisioner.
func TestCheckSnapshotsPerClass(t *testing.T) {
	classes := []StorageClass{
		{Name: "std", Provisioner: "hostpath.example", Default: true},
		{Name: "csi", Provisioner: "csi.example"},
		{Name: "unused", Provisioner: "other.example"},
	}
	for _, tc := range []struct {
		name    string
		named   map[string][]string
		drivers []string
		want    Status
		detail  string
	}{
		{"named class without a snapshot class", map[string][]string{"csi": {"team/db"}}, []string{"hostpath.example"}, Warn,
			"csi (provisioner csi.example, named by team/db)"},
		{"default without, named with", map[string][]string{"csi": {"team/db"}, "": {"team/py"}}, []string{"csi.example"}, Warn,
			"std (provisioner hostpath.example, the default, for team/py)"},
		{"every used class covered", map[string][]string{"csi": {"team/db"}, "": {"team/py"}}, []string{"csi.example", "hostpath.example"}, Pass,
			"covering StorageClasses csi, std"},
		{"an unused class needs none", nil, []string{"hostpath.example"}, Pass, "1 classes, covering StorageClasses std"},
		{"in-tree default", map[string][]string{"": {"team/py"}}, nil, Warn, "std (provisioner kubernetes.io/no-provisioner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := complete()
			f.StorageClasses, f.StorageClassesNamed, f.SnapshotClasses = append([]StorageClass(nil), classes...), tc.named, nil
			if tc.drivers == nil {
				f.StorageClasses[0].Provisioner = "kubernetes.io/no-provisioner"
				tc.drivers = []string{"csi.example"}
			}
			for _, d := range tc.drivers {
				f.SnapshotClasses = append(f.SnapshotClasses, SnapshotClass{Name: "snap-" + d, Driver: d})
			}
			got := CheckSnapshots(f)
			if got.Status != tc.want || !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("%s %q, want %s with %q", got.Status, got.Detail, tc.want, tc.detail)
			}
			if got.Status == Warn && got.Fix == "" {
				t.Error("warns without saying what to do")
			}
			if strings.Contains(got.Fix, "driver kubernetes.io/") {
				t.Errorf("fix asks for a snapshot class of an in-tree provisioner: %q", got.Fix)
			}
		})
	}
}

// The controller's needs include reading the API server's own EndpointSlice
// (by name: its ClusterRole grants only that one) and creating events with
// the events.k8s.io API it records them with.
func TestControllerNeedsEndpointSliceAndEvents(t *testing.T) {
	want := []Need{
		{Verb: "get", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Name: "kubernetes"},
		{Verb: "create", Group: "events.k8s.io", Resource: "events"},
	}
	for _, w := range want {
		found := false
		for _, n := range ControllerNeeds {
			found = found || n == w
		}
		if !found {
			t.Errorf("ControllerNeeds lacks %s", w)
		}
	}
	if got := want[0].String(); got != "get endpointslices.discovery.k8s.io default/kubernetes" {
		t.Errorf("String() = %q", got)
	}
}
