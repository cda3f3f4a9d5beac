package adopt

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
)

func indexSandbox(name, tmpl string, age time.Duration, phase v1alpha1.SandboxPhase) *v1alpha1.Sandbox {
	return &v1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0).Add(-age)),
			Labels:            map[string]string{v1alpha1.LabelPool: "pool", v1alpha1.LabelTemplate: tmpl, v1alpha1.LabelTemplateHash: "h"}},
		Status: v1alpha1.SandboxStatus{Phase: phase},
	}
}

func TestIndex(t *testing.T) {
	x := NewIndex()
	pick := func(tmpl string, skip ...string) string {
		sb, ok := x.Pick("ns", tmpl, "", "h", func(n string) bool {
			for _, s := range skip {
				if s == n {
					return true
				}
			}
			return false
		})
		if !ok {
			return ""
		}
		return sb.Name
	}
	x.Update(indexSandbox("young", "py", time.Minute, v1alpha1.SandboxRunning), false)
	x.Update(indexSandbox("old", "py", time.Hour, v1alpha1.SandboxRunning), false)
	x.Update(indexSandbox("starting", "py", 2*time.Hour, v1alpha1.SandboxPending), false)
	x.Update(indexSandbox("other", "go", 3*time.Hour, v1alpha1.SandboxRunning), false)

	for _, tc := range []struct {
		step string
		do   func()
		tmpl string
		skip []string
		want string
	}{
		{"oldest ready member of the template", nil, "py", nil, "old"},
		{"skipped ones passed over", nil, "py", []string{"old"}, "young"},
		{"every ready member skipped", nil, "py", []string{"old", "young"}, ""},
		{"another template is apart", nil, "go", nil, "other"},
		{"a template without members", nil, "none", nil, ""},
		{"a member that becomes ready is offered", func() {
			x.Update(indexSandbox("starting", "py", 2*time.Hour, v1alpha1.SandboxRunning), false)
		}, "py", nil, "starting"},
		{"a claimed member leaves", func() {
			sb := indexSandbox("starting", "py", 2*time.Hour, v1alpha1.SandboxRunning)
			delete(sb.Labels, v1alpha1.LabelPool)
			x.Update(sb, false)
		}, "py", nil, "old"},
		{"a member being deleted leaves", func() {
			sb := indexSandbox("old", "py", time.Hour, v1alpha1.SandboxRunning)
			sb.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			x.Update(sb, false)
		}, "py", nil, "young"},
		{"a deleted member leaves", func() {
			x.Update(indexSandbox("young", "py", time.Minute, v1alpha1.SandboxRunning), true)
		}, "py", nil, ""},
		{"a member whose template label changes moves", func() {
			x.Update(indexSandbox("other", "py", 3*time.Hour, v1alpha1.SandboxRunning), false)
		}, "go", nil, ""},
		{"… to its new template", nil, "py", nil, "other"},
	} {
		if tc.do != nil {
			tc.do()
		}
		if got := pick(tc.tmpl, tc.skip...); got != tc.want {
			t.Errorf("%s: pick(%q) = %q, want %q", tc.step, tc.tmpl, got, tc.want)
		}
	}
	if len(x.filed) != 1 || len(x.byTemplate) != 1 {
		t.Errorf("index keeps %d names under %d templates, want 1 under 1 (emptied templates dropped)", len(x.filed), len(x.byTemplate))
	}
}
