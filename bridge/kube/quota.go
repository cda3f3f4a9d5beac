package kube

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sandpod/sandpod/core/adopt"
	"github.com/sandpod/sandpod/core/api/v1alpha1"
	"github.com/sandpod/sandpod/core/lifecycle"
)

// quotaState is what this bridge replica knows of its own creates and
// claims that the cache may not show yet: the sandboxes handed out in the
// last minute (also those deleted since, which the cache no longer has)
// and the writes in flight, which count as held until they are made.
type quotaState struct {
	mu  sync.Mutex
	log map[string][]*handedOut // namespace -> this replica's last minute
}

type handedOut struct {
	template, name string // name: empty while the write is in flight
	at             time.Time
	done           bool
}

// admit checks that one more sandbox of template fits the SandboxQuotas of
// ns (lifecycle.CheckQuota) and reserves it; the caller calls the returned
// function with the sandbox's name once written ("" when the write failed).
//
// Use comes from the informer cache (sandboxes held; claims per minute
// from each sandbox's sandpod.dev/claimed-at annotation, else its
// creation time) joined with this replica's own log. Several replicas each
// see the others' claims only once their cache has them (milliseconds), so
// a burst spread over replicas can pass a limit by the claims in flight at
// the same moment; and a sandbox another replica handed out and deleted
// within the minute no longer counts towards the rate.
func (b *Backend) admit(ctx context.Context, ns, template string) (func(name string), error) {
	rules, err := b.quotaRules(ctx, ns)
	if err != nil || len(rules) == 0 {
		return func(string) {}, err
	}
	var list v1alpha1.SandboxList
	if err := b.client.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, apiError(err, "list sandboxes for quota %q", rules[0].Name)
	}
	now := b.now()
	q := &b.quota
	q.mu.Lock()
	defer q.mu.Unlock()
	var use lifecycle.QuotaUse
	seen := map[string]bool{}
	count := func(sb *v1alpha1.Sandbox) {
		if sb != nil && !seen[sb.Name] {
			seen[sb.Name] = true
			adopt.CountForQuota(&use, sb)
		}
	}
	for _, sb := range b.recent.inNamespace(ns) {
		count(sb)
	}
	for i := range list.Items {
		count(&list.Items[i])
	}
	if q.log == nil {
		q.log = map[string][]*handedOut{}
	}
	var keep []*handedOut
	for _, h := range q.log[ns] {
		if !h.at.After(now.Add(-lifecycle.ClaimWindow)) && h.done {
			continue
		}
		keep = append(keep, h)
		switch {
		case !h.done:
			// in flight: held, and a claim
			use.Held = append(use.Held, h.template)
			use.Claims = append(use.Claims, lifecycle.QuotaClaim{Template: h.template, At: h.at})
		case h.name != "" && !seen[h.name]:
			// made here, and gone (or not yet cached): still a claim of the minute
			use.Claims = append(use.Claims, lifecycle.QuotaClaim{Template: h.template, At: h.at})
		}
	}
	q.log[ns] = keep
	if no := lifecycle.CheckQuota(now, rules, use, lifecycle.QuotaAsk{Template: template, Count: 1}); no != nil {
		return nil, no.Err(ns, template)
	}
	h := &handedOut{template: template, at: now}
	q.log[ns] = append(q.log[ns], h)
	return func(name string) {
		q.mu.Lock()
		defer q.mu.Unlock()
		h.name, h.done = name, true
		if name == "" {
			h.at = time.Time{} // nothing was made: forget it
		}
	}, nil
}

// quotaRules are the SandboxQuotas of ns from the cache, by name.
func (b *Backend) quotaRules(ctx context.Context, ns string) ([]lifecycle.QuotaRule, error) {
	var list v1alpha1.SandboxQuotaList
	if err := b.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, apiError(err, "list sandbox quotas")
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	return adopt.QuotaRules(list.Items, func(name string) string {
		pool := &v1alpha1.SandboxWarmPool{}
		if err := b.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pool); err != nil {
			return ""
		}
		return pool.Spec.TemplateRef.Name
	}), nil
}
