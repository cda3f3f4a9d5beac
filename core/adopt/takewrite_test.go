package adopt

import (
	"encoding/json"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

// TestTakeWrite checks that the hand-built patch does to a member what
// client.MergeFrom's whole-object diff does (managedFields reset to the
// API's one empty entry included), and leaves orig untouched.
func TestTakeWrite(t *testing.T) {
	pool := &v1alpha1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pu"}}
	tmpl := &v1alpha1.SandboxTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}}
	member := func() *v1alpha1.Sandbox {
		sb := NewMember(pool, tmpl, "h1")
		sb.Name, sb.ResourceVersion, sb.UID = "p-abc", "42", "su"
		sb.Annotations = map[string]string{"keep": "me"}
		sb.Spec.Env = []corev1.EnvVar{{Name: "OLD", Value: "1"}}
		sb.Status.Phase = v1alpha1.SandboxRunning
		sb.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "sandpod", Operation: metav1.ManagedFieldsOperationUpdate}}
		return sb
	}
	shutdown := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cases := map[string]Holder{
		"bare":       {},
		"everything": {Labels: map[string]string{"team": "rl"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, RequestID: "r1", Lifecycle: v1alpha1.Lifecycle{ShutdownTime: &shutdown}},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			orig := member()
			before := orig.DeepCopy()
			take := func(sb *v1alpha1.Sandbox) {
				Take(sb, h)
				sb.Labels["sandpod.dev/claim"] = "c"
			}
			target, p, err := TakeWrite(orig, take)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(orig, before) {
				t.Fatalf("orig modified")
			}
			if target.Name != orig.Name || target.Namespace != orig.Namespace {
				t.Errorf("target %s/%s", target.Namespace, target.Name)
			}
			want := orig.DeepCopy()
			take(want)
			want.ManagedFields = []metav1.ManagedFieldsEntry{{}}
			wantBody, _ := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}).Data(want)
			gotBody, _ := p.Data(target)
			origJSON, _ := json.Marshal(orig)
			a, err1 := jsonpatch.MergePatch(origJSON, wantBody)
			b, err2 := jsonpatch.MergePatch(origJSON, gotBody)
			if err1 != nil || err2 != nil || !jsonpatch.Equal(a, b) {
				t.Errorf("patch %s\ndiffers from MergeFrom's %s (%v %v)", gotBody, wantBody, err1, err2)
			}
		})
	}
}
