package claim

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// +kubebuilder:rbac:groups=sandpod.dev,resources=sandboxquotas,verbs=get;list;watch

// quotaRecheck is how often a claim held back by maxSandboxes looks again
// (a sandbox deleted elsewhere does not wake it).
const quotaRecheck = 15 * time.Second

// checkQuota says whether one more sandbox of tmpl fits the SandboxQuotas
// of the claim's namespace, from the informer cache (as the bridge counts:
// adopt.CountForQuota), and if not, when to look again. Claims bound in
// the last moments that the cache does not show yet are not counted: a
// burst of SandboxClaims can pass a limit by those in flight.
func (r *Reconciler) checkQuota(ctx context.Context, c *v1alpha1.SandboxClaim, tmpl *v1alpha1.SandboxTemplate, now time.Time) (*lifecycle.QuotaRefusal, time.Duration, error) {
	var quotas v1alpha1.SandboxQuotaList
	if err := r.Client.List(ctx, &quotas, client.InNamespace(c.Namespace)); err != nil {
		return nil, 0, err
	}
	if len(quotas.Items) == 0 {
		return nil, 0, nil
	}
	rules := adopt.QuotaRules(quotas.Items, func(name string) string {
		p := &v1alpha1.SandboxWarmPool{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, p); err != nil {
			return ""
		}
		return p.Spec.TemplateRef.Name
	})
	var list v1alpha1.SandboxList
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, err
	}
	var use lifecycle.QuotaUse
	for i := range list.Items {
		adopt.CountForQuota(&use, &list.Items[i])
	}
	no := lifecycle.CheckQuota(now, rules, use, lifecycle.QuotaAsk{Template: tmpl.Name, Count: 1})
	if no == nil {
		return nil, 0, nil
	}
	wait := quotaRecheck
	if no.RetryAfter > 0 {
		wait = no.RetryAfter
	}
	return no, wait, nil
}
