package adopt

import (
	"sort"
	"time"

	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// CountForQuota adds a sandbox to a namespace's quota use, the same way for
// the bridge and the claim reconciler: an unclaimed pool member counts for
// nothing; any other is held unless being deleted, and is a claim at its
// sandpod.dev/claimed-at annotation (set in the adopting write), else at
// its creation.
func CountForQuota(use *lifecycle.QuotaUse, sb *v1alpha1.Sandbox) {
	if _, pooled := sb.Labels[v1alpha1.LabelPool]; pooled && sb.Labels[v1alpha1.LabelClaim] == "" {
		return
	}
	t := TemplateOf(sb)
	if sb.DeletionTimestamp == nil {
		use.Held = append(use.Held, t)
	}
	at := sb.CreationTimestamp.Time
	if s, err := time.Parse(time.RFC3339Nano, sb.Annotations[v1alpha1.AnnotationClaimedAt]); err == nil {
		at = s
	}
	use.Claims = append(use.Claims, lifecycle.QuotaClaim{Template: t, At: at})
}

// TemplateOf is the template a sandbox was made from.
func TemplateOf(sb *v1alpha1.Sandbox) string {
	if sb.Spec.TemplateRef != nil {
		return sb.Spec.TemplateRef.Name
	}
	return sb.Labels[v1alpha1.LabelTemplate]
}

// QuotaRules turns SandboxQuotas into lifecycle rules, sorted by name, each
// pool resolved to its template by poolTemplate ("" when the pool does not
// exist: the rule then covers nothing of it, never the whole namespace).
func QuotaRules(quotas []v1alpha1.SandboxQuota, poolTemplate func(pool string) string) []lifecycle.QuotaRule {
	out := make([]lifecycle.QuotaRule, 0, len(quotas))
	for _, q := range quotas {
		r := lifecycle.QuotaRule{Name: q.Name, MaxSandboxes: q.Spec.MaxSandboxes, MaxClaimsPerMinute: q.Spec.MaxClaimsPerMinute}
		r.Templates = append(r.Templates, q.Spec.Templates...)
		for _, p := range q.Spec.Pools {
			t := poolTemplate(p)
			if t == "" {
				t = "\x00no-pool:" + p
			}
			r.Templates = append(r.Templates, t)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
