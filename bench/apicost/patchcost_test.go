package apicost_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/hack/kube/harness"
)

// BenchmarkClaimPatchCost splits what kube-apiserver spends on one warm
// take: the single merge patch (adopt.TakeWrite of adopt.Take, as the
// bridge sends it) against
//
//   - member: pool members as the controller makes them (its manager is
//     stopped before the patches, so nothing else writes meanwhile): by
//     default without managedFields (adopt.Untrack);
//   - copy-tracked / copy-untracked: the same content (metadata, spec,
//     status) made by a create and a status write, with its two
//     managedFields entries or none (an object without managedFields is
//     not tracked on update); the tracked copies are taken by a take that
//     keeps them (the patch less its managedFields reset), what every
//     take cost before takes cleared them;
//   - copy-tracked-reset: a tracked copy taken by the take as sent, which
//     clears them (what a member of --untrack-pool-members=false costs);
//   - copy-*-nocel / -notemplateschema / -noschema: the copy in a CRD of
//     another group with the same schema less its CEL rules (all the copies
//     but "copy-" are), with spec.podTemplate unchecked
//     (x-kubernetes-preserve-unknown-fields), and with spec and status
//     unchecked (no structural schema to walk);
//   - configmap: a ConfigMap of the member's size (same metadata, the spec
//     and status as one data string): what a built-in type costs;
//   - copy-4watches: copy with four more watches on the namespace's
//     sandboxes (an informer each), for the fan-out per watcher.
//
// Each op is one patch; 32 writers, as the bench's bursts. Run with a fixed
// count (the members are made once):
//
//	SANDPOD_KUBE_BIN=$(hack/kube/build.sh --print) go test -run '^$' -bench ClaimPatchCost -benchtime 200x ./bench/apicost/
//
// It reports kube-apiserver's and etcd's CPU per patch (from /proc), so
// compare the apiserver-ms/op columns, not ns/op (the machine is shared).
func BenchmarkClaimPatchCost(b *testing.B) {
	harness.Skip(b, env)
	const poolSize = 210 // enough for -benchtime 200x after the first run of 1
	ns := env.Namespace(b)
	stop := env.StartStoppableManager(b, harness.ManagerOptions{}, ns)
	if err := env.Client.Create(ctx, harness.Template(ns, "warm")); err != nil {
		b.Fatal(err)
	}
	if err := env.Client.Create(ctx, harness.Pool(ns, "pool", "warm", poolSize)); err != nil {
		b.Fatal(err)
	}
	var members []v1alpha1.Sandbox
	harness.Eventually(b, 5*time.Minute, "pool full", func() (bool, string) {
		var list v1alpha1.SandboxList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPool: "pool"}); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, sb := range list.Items {
			if sb.Status.Phase == v1alpha1.SandboxRunning && sb.Status.ObservedGeneration == sb.Generation {
				running++
			}
		}
		members = list.Items
		return running == poolSize, fmt.Sprintf("%d of %d running", running, poolSize)
	})
	time.Sleep(2 * time.Second) // the last status writes
	stop()
	time.Sleep(5 * time.Second) // the fill's garbage collected
	// Read them again once nothing writes.
	var list v1alpha1.SandboxList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPool: "pool"}); err != nil {
		b.Fatal(err)
	}
	members = list.Items
	proto := members[0].DeepCopy()
	js, _ := json.Marshal(proto)
	noMF := proto.DeepCopy()
	noMF.ManagedFields = nil
	jsNoMF, _ := json.Marshal(noMF)
	b.Logf("member: %d bytes as JSON, %d without its %d managedFields entries", len(js), len(jsNoMF), len(proto.ManagedFields))
	b.Logf("member as JSON: %s", jsNoMF)
	for _, mf := range proto.ManagedFields {
		b.Logf("  managedFields: %s %s %s (%d bytes)", mf.Manager, mf.Operation, mf.Subresource, len(mf.FieldsV1.Raw))
	}

	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	groups := map[string]string{"nocel": "nocel.sandpod.dev", "noschema": "noschema.sandpod.dev", "notemplateschema": "notemplateschema.sandpod.dev"}
	for kind, group := range groups {
		installSandboxCRDCopy(b, group, kind)
	}

	memberRun := func(objs []v1alpha1.Sandbox) func(b *testing.B) {
		next := 0
		return func(b *testing.B) {
			if next+b.N > len(objs) {
				b.Fatalf("only %d members left for %d patches: use -benchtime %dx or less, -count 1", len(objs)-next, b.N, len(objs)-1)
			}
			run := objs[next : next+b.N]
			next += b.N
			measurePatches(b, len(run), func(i int) error {
				_, p, err := adopt.TakeWrite(&run[i], benchTake)
				if err != nil {
					return err
				}
				return env.Client.Patch(ctx, run[i].DeepCopy(), p)
			})
		}
	}
	// reset false sends the take without its managedFields reset.
	copyOfRun := func(proto *v1alpha1.Sandbox, group string, watches int, tracked, reset bool) func(b *testing.B) {
		return func(b *testing.B) {
			gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "sandboxes"}
			objs := makeCopies(b, dyn, gvr, ns, proto, b.N, tracked)
			for i := 0; i < watches; i++ {
				w, err := dyn.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{})
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					for range w.ResultChan() { //nolint:revive // drain
					}
				}()
				defer w.Stop()
			}
			measurePatches(b, len(objs), func(i int) error {
				_, p, err := adopt.TakeWrite(objs[i], benchTake)
				if err != nil {
					return err
				}
				data, _ := p.Data(nil)
				if !reset {
					data = withoutManagedFieldsReset(b, data)
				}
				_, err = dyn.Resource(gvr).Namespace(ns).Patch(ctx, objs[i].Name, types.MergePatchType, data, metav1.PatchOptions{})
				return err
			})
		}
	}
	copyRun := func(group string, watches int, tracked bool) func(b *testing.B) {
		return copyOfRun(proto, group, watches, tracked, !tracked)
	}
	oneCondition := proto.DeepCopy()
	oneCondition.Status.Conditions = oneCondition.Status.Conditions[:1]
	sandpod := v1alpha1.GroupVersion.Group
	b.Run("copy-tracked", copyRun(sandpod, 0, true))
	b.Run("member", memberRun(members))
	b.Run("copy-tracked-reset", copyOfRun(proto, sandpod, 0, true, true))
	b.Run("copy-untracked", copyRun(sandpod, 0, false))
	b.Run("copy-untracked-4watches", copyRun(sandpod, 4, false))
	b.Run("copy-untracked-nocel", copyRun(groups["nocel"], 0, false))
	b.Run("copy-untracked-nocel-1condition", copyOfRun(oneCondition, groups["nocel"], 0, false, true))
	b.Run("copy-tracked-notemplateschema", copyRun(groups["notemplateschema"], 0, true))
	b.Run("copy-untracked-notemplateschema", copyRun(groups["notemplateschema"], 0, false))
	b.Run("copy-tracked-noschema", copyRun(groups["noschema"], 0, true))
	b.Run("copy-untracked-noschema", copyRun(groups["noschema"], 0, false))
	b.Run("configmap", func(b *testing.B) {
		cms := make([]*corev1.ConfigMap, b.N)
		prefix := fmt.Sprintf("cm-%d-%d", b.N, time.Now().UnixNano()%1000000)
		status, _ := json.Marshal(struct {
			Spec   v1alpha1.SandboxSpec   `json:"spec"`
			Status v1alpha1.SandboxStatus `json:"status"`
		}{proto.Spec, proto.Status})
		parallel(b, b.N, func(i int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i),
				Labels: proto.Labels, Annotations: proto.Annotations, OwnerReferences: proto.OwnerReferences,
			}, Data: map[string]string{"member": string(status)}}
			cms[i] = cm
			return env.Client.Create(ctx, cm)
		})
		if cm, _ := json.Marshal(cms[0]); true {
			b.Logf("configmap: %d bytes as JSON", len(cm))
		}
		measurePatches(b, b.N, func(i int) error {
			sb := proto.DeepCopy()
			sb.ResourceVersion = cms[i].ResourceVersion
			_, p, err := adopt.TakeWrite(sb, benchTake)
			if err != nil {
				return err
			}
			data, _ := p.Data(nil)
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			spec, _ := json.Marshal(m["spec"])
			delete(m, "spec")
			m["data"] = map[string]string{"spec": string(spec)}
			data, _ = json.Marshal(m)
			return env.Client.Patch(ctx, cms[i], client.RawPatch(types.MergePatchType, data))
		})
	})
}

// withoutManagedFieldsReset is a take's merge patch less its
// metadata.managedFields, so the taken object stays tracked.
func withoutManagedFieldsReset(b *testing.B, data []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	md, _ := m["metadata"].(map[string]any)
	if _, ok := md["managedFields"]; !ok {
		b.Fatalf("the take's patch has no managedFields reset: %s", data)
	}
	delete(md, "managedFields")
	out, _ := json.Marshal(m)
	return out
}

// benchTake is what the bridge's ClaimSandbox writes (adopt.Take with a
// request id, its method and the hand-out time).
func benchTake(sb *v1alpha1.Sandbox) {
	adopt.Take(sb, adopt.Holder{RequestID: "req-" + sb.Name, Annotations: map[string]string{
		v1alpha1.AnnotationClaimedAt: time.Now().UTC().Format(time.RFC3339Nano),
	}})
	sb.Annotations[v1alpha1.AnnotationRequestMethod] = "claim"
}

// measurePatches runs n patches from 32 writers and reports kube-apiserver's
// and etcd's CPU per patch.
func measurePatches(b *testing.B, n int, patch func(i int) error) {
	time.Sleep(time.Second) // let the setup's watch events settle
	api0, etcd0 := procCPU(b, env.PID("kube-apiserver")), procCPU(b, env.PID("etcd"))
	// SANDPOD_PATCHCOST_PERF=DIR: perf-record kube-apiserver during each run.
	var rec *exec.Cmd
	if dir := os.Getenv("SANDPOD_PATCHCOST_PERF"); dir != "" && n > 1 {
		name := strings.NewReplacer("/", "_").Replace(b.Name())
		rec = exec.Command("perf", "record", "-F", "999", "-g", "-p", strconv.Itoa(env.PID("kube-apiserver")), "-o", filepath.Join(dir, name+".perf.data"))
		if err := rec.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	b.ResetTimer()
	parallel(b, n, patch)
	b.StopTimer()
	if rec != nil {
		_ = rec.Process.Signal(syscall.SIGINT)
		_ = rec.Wait()
	}
	api1, etcd1 := procCPU(b, env.PID("kube-apiserver")), procCPU(b, env.PID("etcd"))
	b.ReportMetric(float64((api1-api0).Microseconds())/1000/float64(n), "apiserver-ms/op")
	b.ReportMetric(float64((etcd1-etcd0).Microseconds())/1000/float64(n), "etcd-ms/op")
}

func parallel(b *testing.B, n int, f func(i int) error) {
	var idx atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(idx.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// makeCopies creates n copies of proto (metadata, spec, status) in gvr, each
// with a single managedFields entry, and returns them as Sandboxes.
func makeCopies(b *testing.B, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, proto *v1alpha1.Sandbox, n int, tracked bool) []*v1alpha1.Sandbox {
	out := make([]*v1alpha1.Sandbox, n)
	prefix := fmt.Sprintf("%s-%d-%d", strings.Split(gvr.Group, ".")[0], n, time.Now().UnixNano()%100000)
	parallel(b, n, func(i int) error {
		sb := proto.DeepCopy()
		sb.ObjectMeta = metav1.ObjectMeta{
			Namespace: ns, Name: fmt.Sprintf("%s-%d", prefix, i),
			Labels: sb.Labels, Annotations: sb.Annotations, OwnerReferences: sb.OwnerReferences,
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sb)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetAPIVersion(gvr.Group + "/v1alpha1")
		obj.SetKind("Sandbox")
		status := obj.Object["status"]
		delete(obj.Object, "status")
		r := dyn.Resource(gvr).Namespace(ns)
		created, err := r.Create(ctx, obj, metav1.CreateOptions{FieldManager: "copy"})
		if err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]any{"status": status})
		got, err := r.Patch(ctx, created.GetName(), types.MergePatchType, body, metav1.PatchOptions{FieldManager: "copy-status"}, "status")
		if err != nil {
			return err
		}
		if !tracked {
			// No entries left: later updates are not tracked at all.
			if got, err = r.Patch(ctx, created.GetName(), types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`), metav1.PatchOptions{}); err != nil {
				return err
			}
		}
		var typed v1alpha1.Sandbox
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &typed); err != nil {
			return err
		}
		out[i] = &typed
		return nil
	})
	return out
}

// installSandboxCRDCopy installs the Sandbox CRD under another group, less
// its CEL rules, or with spec and status unchecked (noSchema).
func installSandboxCRDCopy(b *testing.B, group, kind string) {
	raw, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "deploy", "crd", "sandpod.dev_sandboxes.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096).Decode(crd); err != nil {
		b.Fatal(err)
	}
	crd.Name = "sandboxes." + group
	crd.Spec.Group = group
	crd.Spec.Names.ShortNames = nil
	crd.Spec.Names.Categories = nil
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.AdditionalPrinterColumns = nil
		s := v.Schema.OpenAPIV3Schema
		stripRules(s)
		if kind == "notemplateschema" {
			t := true
			spec := s.Properties["spec"]
			spec.Properties["podTemplate"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &t}
			s.Properties["spec"] = spec
		}
		if kind == "noschema" {
			t := true
			for _, k := range []string{"spec", "status"} {
				s.Properties[k] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &t}
			}
		}
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		b.Fatal(err)
	}
	harness.Eventually(b, time.Minute, crd.Name+" established", func() (bool, string) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "not established"
	})
	time.Sleep(2 * time.Second) // discovery
}

func stripRules(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.XValidations = nil
	for k, p := range s.Properties {
		stripRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripRules(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		stripRules(s.AdditionalProperties.Schema)
	}
}

// procCPU is a process's user+system CPU time.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
